// Numbers as a person types them on a command line. JavaScript's Number() reads far more than that:
// "0x10" is 16, "1e3" 1000, " 1" 1, "Infinity" infinite; a flag that took those would run with a
// value the user never meant (--max-cost 0x10 is a budget of $16). Only plain decimals pass here.

/** "12", "0.5", ".5": digits with at most one decimal point, no sign, exponent, space or base. */
export function plainDecimal(text: string): number | null {
  return /^(?:\d+(?:\.\d+)?|\.\d+)$/.test(text) ? Number(text) : null;
}

/** "0", "42": digits only. */
export function plainWhole(text: string): number | null {
  return /^\d+$/.test(text) ? Number(text) : null;
}
