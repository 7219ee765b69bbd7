import { describe, expect, test } from 'bun:test';
import { markdownStream, renderMarkdown } from '../../src/cli/markdown.ts';
import { Lexer } from 'marked';
import { screen } from '../support/screen.ts';

// A model's answer arrives in deltas split anywhere; what the terminal shows must not depend on where.
const samples: Record<string, string> = {
  'bullet list then paragraph': 'Steps:\n\n- first item\n- second item\n- third\n\nDone.\n',
  'ordered list with two-digit numbers': 'Plan:\n\n1. one\n2. two\n10. ten\n\nEnd.',
  'loose list': '- a\n\n- b\n\n  more of b\n\n- c\n',
  'nested list': '- outer\n  - inner one\n  - inner two\n- back out\n\ntext',
  'task list': '- [ ] todo\n- [x] done\n\nafter',
  'list after paragraph without blank line': 'Here:\n- one\n- two\nlazy line\n\nnext',
  'heading, code and quote': '# Title\n\nSome `code` and **bold**.\n\n```ts\nconst x = 1;\n```\n\n> quoted\n> more\n\n---\n\n## Sub\ntext',
  'setext heading and table': 'Heading\n=======\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\nend',
  'lists of each bullet': '* star\n* star two\n\n+ plus\n+ plus two\n\n- dash\n',
  'loose ordered list, items apart': '1. one\n\n2. two\n\n12. twelve\n\nafter\n',
  'list then rule': '- a\n- b\n\n---\n\n- c',
  'CRLF line ends': 'Intro\r\n\r\n- one\r\n- two\r\n\r\nend\r\n',
};

const options = { color: true, width: () => 60 };

function streamed(parts: string[]): string {
  const s = markdownStream(options);
  let out = '';
  for (const p of parts) out += s.push(p);
  return out + s.end();
}

describe('markdownStream: output independent of where the deltas split', () => {
  for (const [name, text] of Object.entries(samples)) {
    test(name, () => {
      const whole = renderMarkdown(text, options);
      // Every single split point, and the text one character at a time.
      for (let i = 1; i < text.length; i++) expect({ split: i, out: streamed([text.slice(0, i), text.slice(i)]) }).toEqual({ split: i, out: whole });
      expect(streamed([...text])).toBe(whole);
    });
  }
});

describe('markdownStream: a long block', () => {
  test('a megabyte of code fence in small deltas is lexed a bounded number of times over, and drawn as a whole', () => {
    // Lexing again all the text not drawn yet at every delta was quadratic: minutes for this one.
    const text = `Here:\n\n\`\`\`js\n${'let x = 1; // a line of a long file\n'.repeat(30_000)}\`\`\`\n\nDone.\n`;
    const lex = Lexer.prototype.lex;
    let lexed = 0;
    Lexer.prototype.lex = function (this: Lexer, src: string) {
      lexed += src.length;
      return lex.call(this, src);
    };
    let out = '';
    try {
      const s = markdownStream(options);
      for (let i = 0; i < text.length; i += 20) out += s.push(text.slice(i, i + 20));
      out += s.end();
    } finally {
      Lexer.prototype.lex = lex;
    }
    expect(lexed).toBeLessThan(20 * text.length);
    expect(out).toBe(renderMarkdown(text, options));
  });
});

describe('markdownStream live: the open paragraph shows as it arrives, and the screen ends as the whole text draws it', () => {
  const COLUMNS = 30;
  const still = { color: true, width: () => COLUMNS - 1 };
  const live = (rows = 1000) => ({ ...still, live: { columns: () => COLUMNS, rows: () => rows } });
  const prose: Record<string, string> = {
    'a long paragraph': `${'The quick brown fox jumps over the lazy dog again and again. '.repeat(6).trim()}\n\nDone.\n`,
    'markup in the paragraph': 'Run `npm test` and **then** read [the guide](https://example.org) (or _not_), a & b.\n\nNext: `x` and *y*.',
    'markup left open': 'This has **bold that never closes and `code that does` too.\n\nafter',
    'an address and an email': 'See https://example.org/path or www.example.org, or mail me@example.org today.',
    'a setext heading after a streamed line': 'Looks like a paragraph\n===\n\nthen text',
    'a table after a line of text': 'Intro words\n| a | b |\n|---|---|\n| 1 | 2 |\n\nend',
    'hard-wrapped lines, a list after': 'line one of it\nline two of it\n- a list item\n\nlast',
    'wide characters': '日本語のテキストがここにあります。とても長い段落です。日本語のテキスト。\n\nend',
    'Chinese with markup, an address and English words': '这是一个**很长的**段落，包含`代码`和链接 https://example.org/路径 以及 English words 混合。\n\n𠀀𠀁 end',
  };
  const cases = { ...samples, ...prose };
  for (const [name, text] of Object.entries(cases)) {
    test(name, () => {
      const whole = screen(renderMarkdown(text, still), COLUMNS);
      const run = (parts: string[], rows?: number) => {
        const s = markdownStream(live(rows));
        let out = '';
        for (const p of parts) out += s.push(p);
        return screen(out + s.end(), COLUMNS);
      };
      for (let i = 1; i < text.length; i++) expect({ split: i, screen: run([text.slice(0, i), text.slice(i)]) }).toEqual({ split: i, screen: whole });
      expect(run([...text])).toBe(whole);
    });
  }

  test('words of an open paragraph are shown before it ends; a partial word waits', () => {
    const s = markdownStream(live());
    expect(s.push('Hello wor')).toBe('Hello');
    expect(s.push('ld, this ')).toBe(' world, this');
    expect(s.push('is **bo')).toBe(' is');
    expect(s.push('ld** text')).toBe(' \x1b[1mbold\x1b[22m');
    expect(s.push('\n\nNext')).toBe(' text\n');
    expect(s.end()).toBe('\nNext\n');
  });

  test('Chinese and Japanese, written without spaces, show character by character as they arrive', () => {
    const s = markdownStream(live());
    expect(s.push('中文字符')).toBe('中文字符');
    expect(s.push('测试，这是')).toBe('测试，这是');
    expect(s.push('日本語です。 and wor')).toBe('日本語です。 and');
    expect(s.push('ds **太')).toBe(' words');
    expect(s.push('字**。')).toBe(' \x1b[1m太字\x1b[22m。');
  });

  test('a paragraph that turns out to be a setext heading is erased and drawn as the heading', () => {
    const s = markdownStream(live());
    let out = '';
    for (const ch of 'Looks like a paragraph\n===\n\nthen') out += s.push(ch);
    expect(out.startsWith('Looks like a paragraph')).toBe(true);
    expect(out).toContain('\r\x1b[J\x1b[1m\x1b[4mLooks like a paragraph');
  });

  test('retract takes the open paragraph off the screen; the next push shows it again', () => {
    const s = markdownStream(live());
    let out = s.push('Some words here and');
    out += s.retract();
    expect(screen(out, COLUMNS)).toBe('');
    out += 'conch: a warning\n';
    out += s.push(' more\n\nend');
    out += s.end();
    expect(screen(out, COLUMNS)).toBe('conch: a warning\nSome words here and more\n\nend');
  });

  test('taller than the screen: what cannot be erased stays, and nothing is lost', () => {
    const text = `Heading text that is long enough to wrap over several rows of a narrow screen\n===\n\nend`;
    const s = markdownStream(live(3));
    let out = '';
    for (const ch of text) out += s.push(ch);
    out += s.end();
    const shown = screen(out, COLUMNS);
    // The heading is drawn in full below the lines shown before it turned out to be one.
    expect(shown.endsWith(screen(renderMarkdown(text, still), COLUMNS))).toBe(true);
    const s2 = markdownStream(live(3));
    let out2 = s2.push('A paragraph long enough to take more than three rows on this screen, it goes on');
    out2 += s2.retract();
    out2 += 'conch: warning\n';
    out2 += s2.push(' and ends.');
    out2 += s2.end();
    expect(screen(out2, COLUMNS)).toBe(screen('A paragraph long enough to take more than three rows on this screen, it goes\nconch: warning\n on and ends.', COLUMNS));
  });
});
