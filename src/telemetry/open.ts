// Tracing for a host start: off (nothing loaded), conch's own SDK exporting OTLP (--otel or the
// OTEL_* variables), or spans on an embedder's own Tracer. Everything OpenTelemetry is imported
// here with import(), so the bundle keeps it in a chunk a run without tracing never reads.
import type { Tracer } from '@opentelemetry/api';
import type { Tracing } from './spans.ts';
import { otelWanted } from './wanted.ts';

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
    const { openSdk } = await import('./sdk.ts');
    // The SDK reads process.env itself; the choice's env only decides whether tracing is on.
    return { tracing: await openSdk(process.env) };
  } catch (error) {
    // Tracing never stops a run from starting.
    return { warning: `OpenTelemetry: no trace is exported: ${error instanceof Error ? error.message : String(error)}` };
  }
}
