import { readFileSync } from 'node:fs';

/** USER_HZ: /proc reports CPU time in 1/100 s on Linux. */
export const CLK_TCK = 100;

/** CPU time (user + system) used so far by these processes, in ms; a process gone meanwhile counts 0. */
export function cpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return (ticks * 1000) / CLK_TCK;
}
