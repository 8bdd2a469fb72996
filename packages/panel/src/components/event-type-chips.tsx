/** Subscribed event types as compact chips, the first few and a count of the rest. */
export function EventTypeChips({ types, max = 3 }: { types: string[]; max?: number }) {
  const shown = types.slice(0, max);
  const rest = types.length - shown.length;
  return (
    <ul class="chips" aria-label="Subscribed events">
      {shown.map((t) => (
        <li key={t} class="chip mono">
          {t}
        </li>
      ))}
      {rest > 0 && (
        <li class="chip chip-more" title={types.slice(max).join(', ')}>
          +{rest} more
        </li>
      )}
    </ul>
  );
}
