/** Time is a parameter: production passes `systemClock`, tests pass their own. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** Unix time in whole seconds, as X-Service-Timestamp carries it. */
export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
