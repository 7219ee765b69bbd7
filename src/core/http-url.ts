// A provider's base URL: the flag, the environment and config files all take only http(s) URLs, so
// a typo is a setup error naming where it was written, not the SDK's 'Invalid URL' mid-run.

export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host !== '';
  } catch {
    return false;
  }
}
