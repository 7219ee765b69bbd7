// What a host does with sessions around its runs, in the order it does it:
//   planSession      -c / --resume / --fork / --ephemeral → which session, loaded (before config)
//   policyFlags      the recorded --policy file comes back with a resumed session
//   narrowConfig     the config now ∩ the recorded policy (before the catalog is built)
//   openRecording    the file the runs append to, the conversation they continue, header facts
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { SessionFacts } from '../agent/events.ts';
import type { Journal } from '../agent/loop.ts';
import type { Outcome } from '../agent/outcome.ts';
import type { CliFlags, Config } from '../config/types.ts';
import { secretValues } from '../config/secret-values.ts';
import type { SecretValue } from '../core/secret-scrub.ts';
import type { Message } from '../providers/types.ts';
import { SessionError } from './dir.ts';
import type { LoadedSession } from './load.ts';
import { narrowToRecorded, policySnapshot, resumedPolicyFlag } from './policy.ts';
import { newSessionId, SessionStore } from './store.ts';
import { LatestIndex } from './latest.ts';
import type { SessionWriter } from './writer.ts';

export interface SessionChoice {
  /** -c: the latest session of this workspace. */
  continue?: boolean;
  /** --resume ID (a unique prefix will do). */
  resume?: string;
  /** --fork: a new session from the chosen one. */
  fork?: boolean;
  /** --ephemeral: store nothing. */
  ephemeral?: boolean;
}

export interface SessionPlan {
  store: SessionStore;
  /** Canonical workspace root. */
  cwd: string;
  choice: SessionChoice;
  loaded: LoadedSession | null;
}

/** `indexDir`: where each workspace's latest session is remembered (sessions/latest.ts); none = -c scans the store. */
export function planSession(choice: SessionChoice, cwd: string, dir: string, indexDir?: string): SessionPlan {
  if (choice.continue && choice.resume !== undefined) throw new SessionError('-c/--continue and --resume ID both choose a session; give one of them.');
  if (choice.fork && !choice.continue && choice.resume === undefined) {
    throw new SessionError('--fork needs -c or --resume ID: it says which session to fork.');
  }
  const store = new SessionStore(dir, indexDir === undefined ? null : new LatestIndex(indexDir, dir));
  const root = realpathSync(cwd);
  let loaded: LoadedSession | null = null;
  if (choice.continue) {
    const latest = store.latest(root);
    if (!latest) throw new SessionError(`no earlier session in ${root} to continue; run without -c to start one (\`conch sessions --all\` lists other workspaces').`);
    loaded = store.loadFor(latest, root);
  } else if (choice.resume !== undefined) {
    loaded = store.loadFor(store.resolve(choice.resume, root), root);
  }
  return { store, cwd: root, choice, loaded };
}

export function policyFlags(plan: SessionPlan, flags: CliFlags): CliFlags {
  if (!plan.loaded) return flags;
  return resumedPolicyFlag(flags, plan.loaded.policy, (p) => resolve(plan.cwd, p), plan.loaded.header.id);
}

export function narrowConfig(plan: SessionPlan, config: Config): string[] {
  return plan.loaded ? narrowToRecorded(config, plan.loaded.policy) : [];
}

export interface Recording {
  /** null under --ephemeral. */
  id: string | null;
  /** For run.started (absent under --ephemeral). */
  facts: SessionFacts | undefined;
  /** The conversation so far; every run of the session appends to this array. */
  conversation: Message[];
  /** Loading notes (a skipped torn line) and write failures, for stderr. */
  warnings: string[];
  /** Start a run: its record, and the journal the loop tells each message. */
  begin(runId: string, provider: { name: string; model: string }): Journal | undefined;
  finish(outcome: Outcome): void;
  close(): void;
}

/** Open the session file (new, continued or forked) once setup has succeeded. */
/**
 * `id` names a new session (ACP knows it before the file exists); by default the store picks one.
 * `more`: secret values the host learnt past the config (its MCP servers' tokens), hidden alike.
 */
export function openRecording(plan: SessionPlan, config: Config, narrowed: string[], id?: string, more: SecretValue[] = []): Recording {
  const { loaded, store, choice } = plan;
  const warnings = [...(loaded?.warnings ?? [])];
  const conversation = loaded ? loaded.conversation : [];
  if (choice.ephemeral) return { id: null, facts: undefined, conversation, warnings, begin: () => undefined, finish() {}, close() {} };
  const secrets = [...secretValues(config), ...more];
  const sessionId = loaded && !choice.fork ? loaded.header.id : (id ?? newSessionId());
  // A new file appears with the first run: an editor thread opened and never used leaves nothing.
  // A continued session is opened (and locked) now, so a session busy in another conch is a setup error.
  let writer: SessionWriter | null = loaded && !choice.fork ? store.continue(loaded, secrets) : null;
  // A new session's file is made at the first run, but a store it cannot be made in is said now,
  // before a model call is paid for.
  if (!writer) store.ready();
  const open = (): SessionWriter => {
    if (loaded && !choice.fork) return store.continue(loaded, secrets);
    const created = loaded ? store.fork(loaded, secrets, sessionId) : store.create(plan.cwd, secrets, null, sessionId);
    // A new session may push the oldest beyond the configured cap (sessions.keep).
    store.prune({ keep: config.sessions.keep, spare: created.id });
    return created;
  };
  const facts: SessionFacts = { id: sessionId, parent: choice.fork ? loaded!.header.id : null, resumed: loaded !== null, narrowed };
  const policy = policySnapshot(config);
  const reportFailure = () => {
    if (writer?.failure && !warnings.includes(writer.failure)) warnings.push(writer.failure);
  };
  return {
    id: sessionId,
    facts,
    conversation,
    warnings,
    begin(runId, provider) {
      // Named the latest before its file is made or written: a run killed in between leaves an
      // entry naming a missing file (the next -c scans), never one naming an older session.
      store.noteActive(plan.cwd, sessionId);
      writer ??= open();
      writer.startRun({ runId, provider: provider.name, model: provider.model, policy });
      return writer;
    },
    finish(outcome) {
      writer?.end(outcome);
      // Again at the end: of two runs at once in this workspace, the one that ended last is the latest, as by mtime.
      if (writer) store.noteActive(plan.cwd, sessionId);
      reportFailure();
    },
    close() {
      writer?.close();
    },
  };
}
