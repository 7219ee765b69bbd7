// What conch knows about a model family from its name: the output-token ceiling it defaults to,
// and which reasoning and sampling controls its API accepts. Unknown models get conservative
// answers (no reasoning control, the old 8192 for Anthropic, the server's own default for others).
import type { ProviderConfig } from '../config/provider-config.ts';

export type Thinking = 'off' | 'low' | 'medium' | 'high';
export const THINKING_LEVELS: readonly Thinking[] = ['off', 'low', 'medium', 'high'];

export interface Family {
  /** The default max output tokens; undefined = send none (the server decides). */
  maxOutputTokens: number | undefined;
  /** How reasoning is requested: Anthropic thinking budgets, OpenAI reasoning_effort, or not at all. */
  reasoning: 'budget' | 'effort' | null;
  /** Whether the model accepts a sampling temperature. */
  temperature: boolean;
}

/** Anthropic extended-thinking budgets (tokens) per level; the API's minimum is 1024. */
export const THINKING_BUDGETS: Record<Exclude<Thinking, 'off'>, number> = { low: 4096, medium: 16_384, high: 32_768 };
export const MIN_THINKING_BUDGET = 1024;

const ANTHROPIC_DEFAULT = 8192;

function anthropicFamily(model: string): Family {
  const m = /claude-(?:(\d+)-(\d+)-)?(opus|sonnet|haiku)(?:-(\d+))?/.exec(model);
  if (!m) return { maxOutputTokens: ANTHROPIC_DEFAULT, reasoning: null, temperature: true };
  // claude-3-7-sonnet (version first) or claude-sonnet-4-5 (name first).
  const major = Number(m[1] ?? m[4] ?? 0);
  const minor = Number(m[2] ?? 0);
  const tier = m[3]!;
  if (major >= 4) return { maxOutputTokens: tier === 'opus' ? 32_000 : 64_000, reasoning: 'budget', temperature: true };
  if (major === 3 && minor >= 7) return { maxOutputTokens: 64_000, reasoning: 'budget', temperature: true };
  return { maxOutputTokens: ANTHROPIC_DEFAULT, reasoning: null, temperature: true };
}

function openaiFamily(model: string): Family {
  const id = model.slice(model.lastIndexOf('/') + 1);
  // Reasoning models take reasoning_effort and refuse a temperature.
  if (/^gpt-5(?!.*-chat)/.test(id)) return { maxOutputTokens: 128_000, reasoning: 'effort', temperature: false };
  if (/^o[134](?:-|$)/.test(id)) return { maxOutputTokens: 100_000, reasoning: 'effort', temperature: false };
  if (/^gpt-4\.1/.test(id)) return { maxOutputTokens: 32_768, reasoning: null, temperature: true };
  if (/^gpt-4o/.test(id)) return { maxOutputTokens: 16_384, reasoning: null, temperature: true };
  return { maxOutputTokens: undefined, reasoning: null, temperature: true };
}

export function familyOf(config: Pick<ProviderConfig, 'type' | 'model'>): Family {
  return config.type === 'anthropic' ? anthropicFamily(config.model) : openaiFamily(config.model);
}

/** The output-token limit a request is sent with (undefined: none is sent). */
export function outputLimit(config: ProviderConfig): number | undefined {
  return config.maxOutputTokens ?? familyOf(config).maxOutputTokens;
}

export interface Controls {
  maxOutputTokens: number | undefined;
  /** Anthropic: the thinking budget; undefined = thinking not requested. */
  thinkingBudget?: number;
  /** OpenAI: reasoning_effort. */
  effort?: Exclude<Thinking, 'off'>;
  temperature?: number;
  /** One line each, for stderr: a control asked for that this model cannot take. */
  warnings: string[];
}

/** The controls a request for this model carries, and what had to be left out (never a failed run). */
export function controlsFor(config: ProviderConfig): Controls {
  const family = familyOf(config);
  const label = `${config.name}/${config.model}`;
  const controls: Controls = { maxOutputTokens: outputLimit(config), warnings: [] };
  const thinking = config.thinking ?? 'off';
  if (thinking !== 'off') {
    if (family.reasoning === 'budget') {
      const limit = controls.maxOutputTokens ?? ANTHROPIC_DEFAULT;
      // The budget is part of max_tokens and must leave room for the answer.
      const budget = Math.min(THINKING_BUDGETS[thinking], limit - MIN_THINKING_BUDGET);
      if (budget >= MIN_THINKING_BUDGET) controls.thinkingBudget = budget;
      else controls.warnings.push(`--thinking ${thinking} ignored: ${label} needs an output limit above ${2 * MIN_THINKING_BUDGET} tokens for thinking (it is ${limit}; --max-output-tokens)`);
    } else if (family.reasoning === 'effort') {
      controls.effort = thinking;
    } else {
      controls.warnings.push(`--thinking ${thinking} ignored: conch knows no reasoning control for ${label}`);
    }
  }
  if (config.temperature !== undefined) {
    if (!family.temperature) controls.warnings.push(`--temperature ignored: ${label} does not accept a temperature`);
    else if (controls.thinkingBudget !== undefined) controls.warnings.push(`--temperature ignored: ${label} takes no temperature while thinking`);
    else controls.temperature = config.temperature;
  }
  return controls;
}
