/**
 * A short form of an id for lists. Herald's ids are time-ordered (UUID v7):
 * those made within the same minute share their first eight characters, so
 * the start tells them apart badly. The last eight are random: "…3f9a12c0".
 */
export function shortId(id: string): string {
  return `…${id.slice(-8)}`;
}
