// Writes docs/openapi.json from the route schemas. CI fails when the committed
// copy differs from what the server serves (test/openapi.test.ts).
import { writeFileSync } from 'node:fs';
import { openApiDocument, openApiText } from '../src/http/openapi.ts';

const target = new URL('../../../docs/openapi.json', import.meta.url);
writeFileSync(target, openApiText(await openApiDocument()));
console.log(`wrote ${target.pathname}`);
