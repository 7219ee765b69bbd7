import { describe, expect, test } from 'bun:test';
import { parseNote } from '../../plugins/vault/parse.ts';

const NOTE = [
  '---',
  'title: Hello',
  'tags: [a, "#b"]',
  'related: "[[Fm Link]]"',
  '---',
  '# Heading #nottag',
  '',
  '- item `code [[x]]`',
  '  ```',
  '  [[in a listed fence]]',
  '  ```',
  '- [[Li|al]] and [md](Other%20Note.md#sec)',
  '',
  '> quoted `[[no]]` [[Quoted#h]]',
  '',
  'para ![[y]] #tag #123 #x/y',
  '',
  '    indented [[z]]',
  '',
  '```js',
  '[[fenced]] #nope',
  '```',
  '| a | b |',
  '|---|---|',
  '| [[Tab]] | `[[no]]` |',
  '',
].join('\n');

describe('vault note parsing', () => {
  test('frontmatter, title, tags and headings', () => {
    const p = parseNote(NOTE);
    expect(p.frontmatter).toMatchObject({ title: 'Hello' });
    expect(p.title).toBe('Hello');
    expect(p.tags).toEqual(['a', 'b', 'tag', 'x/y']);
    expect(p.headings).toEqual([{ depth: 1, text: 'Heading #nottag', line: 6 }]);
    expect(parseNote('# First\n\n# Second\n').title).toBe('First');
    expect(parseNote('no heading\n').title).toBeNull();
  });

  test('wikilinks and markdown links outside code, with offsets into the text as written (LF and CRLF)', () => {
    for (const text of [NOTE, NOTE.replace(/\n/g, '\r\n')]) {
      const p = parseNote(text);
      expect(p.links.map((l) => text.slice(l.start, l.end))).toEqual(['[[Fm Link]]', '[[Li|al]]', 'Other%20Note.md#sec', '[[Quoted#h]]', '![[y]]', '[[Tab]]']);
      expect(p.links.map((l) => [l.kind, l.target, l.heading ?? null, l.alias ?? null, l.embed, l.line])).toEqual([
        ['wiki', 'Fm Link', null, null, false, 4],
        ['wiki', 'Li', null, 'al', false, 12],
        ['markdown', 'Other Note.md', 'sec', null, false, 12],
        ['wiki', 'Quoted', 'h', null, false, 14],
        ['wiki', 'y', null, null, true, 16],
        ['wiki', 'Tab', null, null, false, 25],
      ]);
    }
  });
});

describe('vault note parsing of large notes', () => {
  // Each check was a scan of every code span or link, per link and per tag: a 400 KB note of this
  // kind took seconds, 800 KB minutes, and every vault tool waited for it (each call indexes the vault).
  test('a note of 80,000 code spans, wikilinks and tags, with CRLF line ends, is parsed whole and right', () => {
    const line = '`a`[[Y]] #t\r\n';
    const paragraph = `${line.repeat(100)}\r\n`;
    const note = parseNote(paragraph.repeat(800));
    expect(note.tooLarge).toBeUndefined();
    expect(note.links.length).toBe(80_000);
    expect(note.links.every((l) => l.target === 'Y')).toBe(true);
    const last = note.links.at(-1)!;
    expect(last.start).toBe(799 * paragraph.length + 99 * line.length + line.indexOf('[[Y'));
    expect(last.end).toBe(last.start + '[[Y]]'.length);
    expect(note.tags).toEqual(['t']);
  });
});

describe('vault notes too large to parse', () => {
  // marked's lexer ran for minutes on a paragraph of some 1.4 MB; a vault holding one such note
  // (a pasted log, a clipped page) made every vault tool wait for it.
  test('a note over 1 MiB keeps its frontmatter and line count; its structure is not parsed', () => {
    const text = `---\ntitle: Big log\ntags: [log]\n---\n${'lorem ipsum [[Alpha]] dolor sit amet #tag\n'.repeat(40_000)}`;
    const note = parseNote(text);
    expect(note.tooLarge).toBe(true);
    expect(note.title).toBe('Big log');
    expect(note.frontmatter).toEqual({ title: 'Big log', tags: ['log'] });
    expect(note.lines).toBe(40_004);
    expect(note.links).toEqual([]);
    expect(note.tags).toEqual([]);
    expect(parseNote('[[Alpha]] #tag\n').tooLarge).toBeUndefined();
  });
});
