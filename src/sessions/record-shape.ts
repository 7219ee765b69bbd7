// Whether a parsed session line has the shape its `t` promises. A line that is valid JSON but not a
// record conch writes (a hand edit, a file from a broken disk, another program) is skipped like a torn
// line: loading, listing, `sessions show` and a continued run read every field without checking again.
// Records of a kind this version does not know are let through (the loader ignores them).
import type { SessionRecord } from './records.ts';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const optStr = (v: unknown) => v === undefined || isStr(v);
const isNum = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const isBool = (v: unknown) => typeof v === 'boolean';
const strList = (v: unknown) => Array.isArray(v) && v.every(isStr);

function block(v: unknown): boolean {
  if (!isObj(v)) return false;
  if (v.type === 'text') return isStr(v.text);
  return v.type === 'image' && isStr(v.mediaType) && isStr(v.ref);
}

const blocks = (v: unknown) => Array.isArray(v) && v.every(block);

function policy(v: unknown): boolean {
  return (
    isObj(v) &&
    ['unrestricted', 'readOnly', 'shell', 'filesystem', 'network'].every((k) => isBool(v[k])) &&
    (v.netAllow === undefined || v.netAllow === null || strList(v.netAllow)) &&
    isStr(v.profile) &&
    (v.only === null || strList(v.only)) &&
    strList(v.denied) &&
    strList(v.writableRoots) &&
    (v.policyFile === null || isStr(v.policyFile))
  );
}

const toolCall = (v: unknown) => isObj(v) && isStr(v.id) && isStr(v.name) && isStr(v.arguments);

function thinking(v: unknown): boolean {
  if (!isObj(v)) return false;
  if (v.type === 'thinking') return isStr(v.text) && optStr(v.signature);
  return v.type === 'redacted_thinking' && isStr(v.data);
}

function message(v: unknown): boolean {
  if (!isObj(v)) return false;
  if (v.role === 'user') return blocks(v.content);
  return (
    v.role === 'assistant' &&
    isStr(v.text) &&
    (v.toolCalls === undefined || (Array.isArray(v.toolCalls) && v.toolCalls.every(toolCall))) &&
    (v.thinking === undefined || (Array.isArray(v.thinking) && v.thinking.every(thinking)))
  );
}

const result = (v: unknown) => isObj(v) && isStr(v.callId) && isStr(v.name) && blocks(v.content) && isBool(v.isError);

function counts(v: unknown): boolean {
  return isObj(v) && isNum(v.modelCalls) && isNum(v.toolCalls) && isNum(v.toolErrors);
}

export function isSessionRecord(v: unknown): v is SessionRecord {
  if (!isObj(v) || !isStr(v.t)) return false;
  switch (v.t) {
    case 'session':
      // A second header inside the file is not a record the loader can use.
      return false;
    case 'run':
      return isStr(v.runId) && isStr(v.time) && isStr(v.provider) && isStr(v.model) && policy(v.policy);
    case 'blob':
      return isStr(v.hash) && isStr(v.mediaType) && isStr(v.data);
    case 'msg':
      return isStr(v.runId) && message(v.m);
    case 'result':
      return isStr(v.runId) && result(v.r);
    case 'end':
      return (
        isStr(v.runId) &&
        isStr(v.time) &&
        isStr(v.status) &&
        optStr(v.code) &&
        optStr(v.limit) &&
        optStr(v.message) &&
        counts(v.counts) &&
        isNum(v.durationMs)
      );
    default:
      return true;
  }
}
