// The token, reasoning and sampling controls of each model of the route. Precedence, later wins:
// top-level keys → providers.<name>.maxOutputTokens → models["provider/model"] (user, then project
// config) → flags. What the model family cannot take is decided later (providers/families.ts).
import type { ProviderConfig } from './provider-config.ts';
import type { CliFlags } from './types.ts';
import type { ConfigFile } from './file.ts';

export function withModelOptions(provider: ProviderConfig, files: ConfigFile[], flags: CliFlags): ProviderConfig {
  const out: ProviderConfig = { ...provider };
  const key = `${provider.name}/${provider.model}`;
  for (const { value } of files) {
    const perModel = value.models?.[key];
    const maxOutputTokens = perModel?.maxOutputTokens ?? value.providers?.[provider.name]?.maxOutputTokens ?? value.maxOutputTokens;
    if (maxOutputTokens !== undefined) out.maxOutputTokens = maxOutputTokens;
    const thinking = perModel?.thinking ?? value.thinking;
    if (thinking !== undefined) out.thinking = thinking;
    const temperature = perModel?.temperature ?? value.temperature;
    if (temperature !== undefined) out.temperature = temperature;
    const structuredOutput = value.providers?.[provider.name]?.structuredOutput;
    if (structuredOutput !== undefined) out.structuredOutput = structuredOutput;
    const maxTools = value.providers?.[provider.name]?.maxTools;
    if (maxTools !== undefined) out.maxTools = maxTools;
  }
  if (flags.maxOutputTokens !== undefined) out.maxOutputTokens = flags.maxOutputTokens;
  if (flags.thinking !== undefined) out.thinking = flags.thinking;
  if (flags.temperature !== undefined) out.temperature = flags.temperature;
  return out;
}
