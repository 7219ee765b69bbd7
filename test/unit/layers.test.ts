// Folders are layers: an import points down this list or stays inside its folder, never up, and
// no files import each other in a circle. The layer order is written here, once.
import { describe, expect, test } from 'bun:test';
import { cycles, fileGraph, folderEdges, folderOf, importEdges } from '../support/import-graph.ts';

// Top to bottom. Folders on one line are one layer; they may not import each other at all.
const LAYERS: string[][] = [
  ['index', 'build'], // src/index.ts (the public API) and src/build.ts
  ['cli'],
  ['acp'],
  ['host'],
  ['telemetry'], // OpenTelemetry spans from a run's events (host/start.ts loads it only when tracing is on)
  ['sessions'],
  ['agent'],
  ['mcp'],
  ['plugins'],
  ['skills', 'providers'],
  ['tools/kernel'],
  ['tools'],
  ['files'],
  ['shell'],
  ['policy'],
  ['config'],
  ['workspace'],
  ['sandbox'],
  ['process'],
  ['core'],
];

const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as [string, number])));
const edges = importEdges();

describe('layers', () => {
  test('every folder of src/ has a place in the layer order', () => {
    const folders = new Set(edges.flatMap((e) => [folderOf(e.from), folderOf(e.to)]));
    expect([...folders].filter((f) => !rank.has(f)).sort()).toEqual([]);
  });

  test('imports point down the layer order, never up or sideways to another folder', () => {
    const wrong = edges
      .filter((e) => folderOf(e.from) !== folderOf(e.to) && rank.get(folderOf(e.to))! <= rank.get(folderOf(e.from))!)
      .map((e) => `${e.from} -> ${e.to}`);
    expect(wrong).toEqual([]);
  });

  test('no import cycle between folders', () => {
    const graph = new Map([...folderEdges(edges)].map(([a, row]) => [a, [...row.keys()]]));
    expect(cycles(graph)).toEqual([]);
  });

  test('no import cycle between files', () => {
    expect(cycles(fileGraph(edges))).toEqual([]);
  });

  test('the walker sees a cycle and an upward arrow when there is one', () => {
    // The checks above would pass on an empty graph; this one proves they can fail.
    expect(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]]))).toEqual([['a', 'b', 'c']]);
    expect(edges.some((e) => e.from === 'cli/main.ts' && folderOf(e.to) === 'acp')).toBe(true);
    expect(rank.get('acp')! > rank.get('cli')!).toBe(true);
  });
});
