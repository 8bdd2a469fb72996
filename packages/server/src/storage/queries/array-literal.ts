/**
 * PostgreSQL array literals (`{a,b,NULL}`), written in one join per array.
 *
 * The driver turns a JavaScript array into the same text, but it builds it by
 * concatenating piece by piece (quoting and escaping every element, and
 * formatting each Date in local time), which was about a tenth of what a
 * busy worker allocated per delivery for the recording's arrays
 * in the benchmark. A literal is sent as text and cast in
 * the statement (`$2::uuid[]`), so both engines read it the same.
 */

/** Elements written as they are: uuids, integers. No element may need quoting. null and undefined are NULL, as the driver wrote them. */
export function plainArray(values: readonly (string | number | null | undefined)[]): string {
  return `{${values.map((v) => (v == null ? 'NULL' : v)).join(',')}}`;
}

/** Text elements, each quoted, with `\` and `"` escaped; null and undefined are NULL. */
export function textArray(values: readonly (string | null | undefined)[]): string {
  return `{${values.map((v) => (v == null ? 'NULL' : `"${v.replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;
}

/** Times, written as UTC ISO 8601 with milliseconds. */
export function timeArray(values: readonly Date[]): string {
  return `{${values.map((v) => v.toISOString()).join(',')}}`;
}
