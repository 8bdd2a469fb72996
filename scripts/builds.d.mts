export declare const ROOT: string;
export declare const BUILDS: ReadonlyArray<{ dir: string; stamp: string; inputs: readonly string[] }>;
export declare function buildStates(): Array<{ dir: string; state: 'missing' | 'stale' | 'current' }>;
