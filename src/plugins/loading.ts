// Which plugin file is loading now, for the watchdog (cli/watchdog.ts) to name when a plugin's top
// level never yields: the main thread is stuck in it then and cannot say which, so it says so just
// before each import runs plugin code. Imports overlap (load.ts starts them together), so the one
// named is the last to start of those not finished: the one whose code runs when the thread stops.

let listener: ((path: string | null) => void) | null = null;
const loading: string[] = [];

/** Be told the plugin now loading each time that changes (null: none); one listener, null removes it. */
export function watchPluginLoads(next: ((path: string | null) => void) | null): void {
  listener = next;
}

/** Run `work` (one plugin's import or setup) as the loading of the plugin at `path`. */
export async function loadingPlugin<T>(path: string, work: () => Promise<T>): Promise<T> {
  loading.push(path);
  listener?.(path);
  try {
    return await work();
  } finally {
    loading.splice(loading.lastIndexOf(path), 1);
    listener?.(loading.at(-1) ?? null);
  }
}
