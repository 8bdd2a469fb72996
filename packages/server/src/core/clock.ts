/** Time is a parameter: production passes `systemClock`, tests pass their own. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** Unix time in whole seconds, as X-Service-Timestamp carries it. */
export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/**
 * The time a query should take as "now": null for the system clock (the
 * query then uses the database's own clock, the one every process shares),
 * the clock's time otherwise (tests).
 */
export function databaseTime(clock: Clock): Date | null {
  return clock === systemClock ? null : clock();
}
