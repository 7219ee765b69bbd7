// Whether a run exports traces: --otel or an endpoint variable turns it on; the SDK's off switches win.
import { expect, test } from 'bun:test';
import { otelWanted } from '../../src/telemetry/wanted.ts';

test('off by default; on with --otel, OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', () => {
  expect(otelWanted(undefined, {})).toBe(false);
  expect(otelWanted(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBe(false);
  expect(otelWanted(true, {})).toBe(true);
  expect(otelWanted(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
  expect(otelWanted(undefined, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
  // Other signals' endpoints say nothing about traces.
  expect(otelWanted(undefined, { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://collector:4318/v1/metrics' })).toBe(false);
});

test('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off, --otel included', () => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
  expect(otelWanted(true, { ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBe(false);
  expect(otelWanted(true, { ...endpoint, OTEL_SDK_DISABLED: ' TRUE ' })).toBe(false);
  expect(otelWanted(true, { ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  expect(otelWanted(true, { ...endpoint, OTEL_SDK_DISABLED: 'false' })).toBe(true);
  expect(otelWanted(true, { ...endpoint, OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
});
