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

/** The whole machine's CPU ticks since boot: busy and all (first line of /proc/stat). */
export function machineTicks(): { busy: number; all: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const all = f.reduce((a, b) => a + b, 0);
  return { busy: all - f[3]! - f[4]!, all };
}
