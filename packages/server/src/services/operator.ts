import { HeraldError } from '../errors.ts';
import { listAccounts, type AccountRow } from '../storage/queries/accounts.ts';
import { listApiKeys, revokeApiKey, type ApiKeyRow } from '../storage/queries/api-keys.ts';
import { listEventTypes } from '../storage/queries/event-types.ts';
import { createAccount, createApiKey, requireAccount } from './accounts.ts';
import { addEventType, eventTypeJson } from './event-types.ts';
import { generatePassword } from '../core/passwords.ts';
import { listUsers } from '../storage/queries/users.ts';
import { createUser, deleteUser, setUserPassword, userJson } from './users.ts';
import type { ServiceDeps } from './deps.ts';

const accountJson = (a: AccountRow) => ({ id: a.id, name: a.name, created_at: a.created_at.toISOString() });
const keyJson = (k: ApiKeyRow) => ({
  id: k.id,
  account_id: k.account_id,
  name: k.name,
  prefix: k.prefix,
  created_at: k.created_at.toISOString(),
  revoked_at: k.revoked_at?.toISOString() ?? null,
});

type Args = Record<string, unknown>;

/**
 * Lists in the shape of the API's: `data`, and `next_cursor`, which is always
 * null here (these lists are short and come whole), so a script reads every
 * list Herald prints the same way.
 */
const list = <T>(data: T[]) => ({ data, next_cursor: null });

/**
 * The operator's commands, by name. The CLI runs them on the database
 * directly, or, when a running embedded Herald holds the data directory, sends
 * them to its admin socket, which runs the same functions.
 */
export const OPERATOR_OPS = {
  'accounts.create': async (deps: ServiceDeps, args: Args) => accountJson(await createAccount(deps.db, args.name)),
  'accounts.list': async (deps: ServiceDeps) => list((await listAccounts(deps.db)).map(accountJson)),
  'keys.create': async (deps: ServiceDeps, args: Args) => {
    const { key, row } = await createApiKey(deps.db, String(args.account ?? ''), typeof args.name === 'string' ? args.name : undefined);
    return { ...keyJson(row), key };
  },
  'keys.list': async (deps: ServiceDeps, args: Args) => list(((await listApiKeys(deps.db, await requireAccount(deps.db, args.account))) ?? []).map(keyJson)),
  'keys.revoke': async (deps: ServiceDeps, args: Args) => {
    const row = await revokeApiKey(deps.db, String(args.key ?? ''));
    if (!row) throw new HeraldError('not_found', `no API key with id or prefix "${String(args.key)}"; list them with: herald keys list --account <id>`);
    deps.apiKeys.forget(row.prefix);
    return keyJson(row);
  },
  // Without a password, one is generated and returned this once.
  'users.create': async (deps: ServiceDeps, args: Args) => {
    const generated = args.password === undefined ? generatePassword() : undefined;
    const user = await createUser(deps.db, deps.passwords, String(args.account ?? ''), { email: args.email, name: args.name, password: generated ?? args.password });
    // Herald has a user now: the setup link it printed must not reopen setup, even if every user is deleted later.
    deps.setupToken?.spend();
    return { ...userJson(user), ...(generated ? { password: generated } : {}) };
  },
  'users.list': async (deps: ServiceDeps, args: Args) =>
    list((await listUsers(deps.db, args.account === undefined ? undefined : await requireAccount(deps.db, args.account))).map(userJson)),
  'users.delete': async (deps: ServiceDeps, args: Args) => userJson(await deleteUser(deps.db, String(args.user ?? ''))),
  'users.set-password': async (deps: ServiceDeps, args: Args) => {
    const generated = args.password === undefined ? generatePassword() : undefined;
    const user = await setUserPassword(deps.db, deps.passwords, String(args.user ?? ''), generated ?? args.password);
    return { ...userJson(user), ...(generated ? { password: generated } : {}) };
  },
  'event-types.list': async (deps: ServiceDeps) => list((await listEventTypes(deps.db)).map(eventTypeJson)),
  'event-types.add': async (deps: ServiceDeps, args: Args) => eventTypeJson(await addEventType(deps.db, deps.validator, args as { name: unknown })),
} as const;

export type OperatorOp = keyof typeof OPERATOR_OPS;

export function isOperatorOp(name: string): name is OperatorOp {
  return Object.hasOwn(OPERATOR_OPS, name);
}
