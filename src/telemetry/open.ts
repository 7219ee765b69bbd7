// Tracing for a host start: off (nothing loaded), conch's own SDK exporting OTLP (--otel or the
// OTEL_* variables), or spans on an embedder's own Tracer. Everything OpenTelemetry is imported
// here with import(), only when tracing is on.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Tracer } from '@opentelemetry/api';
import type { Tracing } from './spans.ts';
import { otelWanted } from './wanted.ts';

/** The file beside main.js that the bundle (src/build.ts) keeps the SDK in: an untraced start never reads it. */
export const SDK_BUNDLE = 'otel-sdk.js';

/** sdk.ts, from the bundle's file when running bundled; a computed path, so the bundler leaves it out of main.js. */
function loadSdk(): Promise<typeof import('./sdk.ts')> {
  const bundled = join(import.meta.dir, SDK_BUNDLE);
  return import(existsSync(bundled) ? bundled : join(import.meta.dir, 'sdk.ts'));
}

export interface TracingChoice {
  /** --otel */
  flag?: boolean;
  /** An embedder's tracer: conch's spans join its traces, exported however it exports them. */
  tracer?: Tracer;
  env: Record<string, string | undefined>;
}

/** Tracing for this start, or none; `warning` says why it is off although it was asked for. */
export async function openTracing(choice: TracingChoice): Promise<{ tracing?: Tracing; warning?: string }> {
  try {
    if (choice.tracer) {
      const [{ context }, { runSpans }] = await Promise.all([import('@opentelemetry/api'), import('./spans.ts')]);
      const tracer = choice.tracer;
      return { tracing: { run: () => runSpans(tracer, context.active()), runEnded: () => {}, close: async () => [] } };
    }
    if (!otelWanted(choice.flag, choice.env)) return {};
    const { openSdk } = await loadSdk();
    // The SDK reads process.env itself; the choice's env only decides whether tracing is on.
    return { tracing: await openSdk(process.env) };
  } catch (error) {
    // Tracing never stops a run from starting.
    return { warning: `OpenTelemetry: no trace is exported: ${error instanceof Error ? error.message : String(error)}` };
  }
}
