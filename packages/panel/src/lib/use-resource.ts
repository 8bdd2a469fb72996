import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api/client.ts';

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  /** Loads again, keeping the current data on screen meanwhile. */
  reload(): Promise<void>;
  /** Replaces the data with what an action just returned. */
  set(data: T): void;
}

/** Loads something from the API when `key` changes; aborts the previous load. */
export function useResource<T>(load: (signal: AbortSignal) => Promise<T>, key: unknown): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const loadRef = useRef(load);
  loadRef.current = load;
  const controller = useRef<AbortController>();

  const run = useCallback(async () => {
    controller.current?.abort();
    const c = new AbortController();
    controller.current = c;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await loadRef.current(c.signal);
      if (!c.signal.aborted) setState({ data, loading: false });
    } catch (err) {
      if (c.signal.aborted) return;
      setState((s) => ({ data: s.data, error: asApiError(err), loading: false }));
    }
  }, []);

  useEffect(() => {
    setState({ loading: true });
    void run();
    return () => controller.current?.abort();
  }, [key]);

  return { ...state, reload: run, set: (data: T) => setState({ data, loading: false }) } as Resource<T>;
}

export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError({
    type: 'about:blank',
    title: 'Something went wrong',
    status: 0,
    code: 'client_error',
    detail: `The panel hit an unexpected problem (${(err as Error)?.message ?? String(err)}). Reload the page and try again.`,
  });
}
