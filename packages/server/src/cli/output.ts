/** Prints an operator command's result: JSON with --json, otherwise lines for people. */
export function printResult(op: string, result: unknown, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(result, null, 2));
    return;
  }
  // A list is `{ data, next_cursor }`, as the API's lists are; anything else is one row.
  const page = result as { data?: unknown };
  const rows = Array.isArray(page?.data) ? page.data : [result];
  if (rows.length === 0) {
    console.log('(none)');
    return;
  }
  for (const row of rows as Array<Record<string, unknown>>) {
    switch (op) {
      case 'accounts.create':
      case 'accounts.list':
        console.log(`${row.id}  ${row.name}`);
        break;
      case 'keys.create':
        console.log(`API key for account ${row.account_id} (shown once; store it now):\n\n  ${row.key}\n`);
        break;
      case 'keys.list':
      case 'keys.revoke':
        console.log(`${row.id}  ${row.prefix}  ${row.name}${row.revoked_at ? `  revoked ${row.revoked_at}` : ''}`);
        break;
      case 'users.create':
      case 'users.set-password':
        console.log(`${row.id}  ${row.email}  ${row.name}  (account ${row.account_id})`);
        if (row.password) console.log(`\nGenerated password (shown once; give it to ${row.name} and ask them to keep it safe):\n\n  ${row.password}\n`);
        else if (op === 'users.set-password') console.log('Password changed; every session of this user has ended.');
        break;
      case 'users.list':
      case 'users.delete':
        console.log(`${row.id}  ${row.email}  ${row.name}  (account ${row.account_id})${op === 'users.delete' ? '  deleted; signed out everywhere' : ''}`);
        break;
      case 'event-types.list':
      case 'event-types.add':
        console.log(`${row.name}${row.builtin ? '  (built in)' : ''}  ${row.description}`);
        break;
      default:
        console.log(JSON.stringify(row));
    }
  }
}
