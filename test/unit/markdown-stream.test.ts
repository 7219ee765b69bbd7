import { describe, expect, test } from 'bun:test';
import { markdownStream, renderMarkdown } from '../../src/cli/markdown.ts';
import { Lexer } from 'marked';

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
