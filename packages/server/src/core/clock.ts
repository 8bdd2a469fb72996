/** Time is a parameter: production passes `systemClock`, tests pass their own. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** Unix time in whole seconds, as X-Service-Timestamp carries it. */
export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/**
 * The time a query that writes a lease, a due time or a retention cut-off
 * should use: null (the database's own clock, `now()`) in production, so
 * every worker agrees whatever its machine's clock says; the test clock's
 * time when a test drives time itself.
 */
export function databaseTime(clock: Clock): Date | null {
  return clock === systemClock ? null : clock();
}
