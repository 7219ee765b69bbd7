// The parts of sucrase the fast transform uses (plugins/sucrase.ts), in one module: src/build.ts
// bundles this file into the bytecode copy beside the bundle, and a run from source requires it
// as is. Only the CommonJS build is named, so the copy holds one sucrase, not two. (Its deep
// files carry no type declarations of their own; sucrase ships them under dist/types.)
const index = require('sucrase/dist/index.js') as typeof import('sucrase');
const parser = require('sucrase/dist/parser/index.js') as typeof import('sucrase/dist/types/parser/index');
const types = require('sucrase/dist/parser/tokenizer/types.js') as typeof import('sucrase/dist/types/parser/tokenizer/types');

export const { transform, getVersion } = index;
export const { parse } = parser;
export const { TokenType } = types;
