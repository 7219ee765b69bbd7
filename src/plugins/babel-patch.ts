// A build-time edit of jiti's Babel (the bundle's copy, src/build.ts) that makes a first start with
// many plugins cheaper without changing one byte of what it produces. jiti's transform builds its
// Babel plugin list afresh for every file: new option objects defeat Babel's cache of instantiated
// plugins (each file instantiated the CommonJS, TypeScript and decorator plugins again), and every
// plugin is listed whether the file can use it or not, each costing a visitor merge, and some a
// whole traversal of their own, per file. The edit:
//   - keeps one options object per distinct value, so Babel reuses its plugin instances;
//   - lists the decorator plugins (legacy decorators, TypeScript metadata, parameter decorators)
//     only for a file with an `@` in it: all three act only on decorators, which need one;
//   - lists the three import.meta plugins only for a file with `meta` in it: they rewrite only
//     `import.meta.…`, which cannot be written without those letters (no escapes in keywords).
// Each replaced text must be found exactly once, else the copy is left as jiti ships it (a newer
// jiti: only the speed is lost; test/unit/babel-patch.test.ts says so for the installed one).

interface Edit {
  from: string;
  to: string;
}

const EDITS: Edit[] = [
  {
    from: 'function transform(r){',
    to: 'const __conchOptions=new Map;function __conchOnce(k,f){let v=__conchOptions.get(k);if(v===void 0){v=f();__conchOptions.set(k,v)}return v}function transform(r){',
  },
  {
    from: 'plugins:[[et,{allowTopLevelThis:!0,noInterop:!r.interopDefault,async:r.async}],[importMetaPathsPlugin,{filename:r.filename}],[importMetaEnvPlugin],[importMetaResolvePlugin],',
    to: 'plugins:[[et,__conchOnce("cjs"+!r.interopDefault+!!r.async,()=>({allowTopLevelThis:!0,noInterop:!r.interopDefault,async:r.async}))],...(String(r.source).includes("meta")?[[importMetaPathsPlugin,{filename:r.filename}],[importMetaEnvPlugin],[importMetaResolvePlugin]]:[]),',
  },
  {
    from: 'r.ts&&(c.plugins.push([p.default,{allowDeclareFields:!0,isTSX:r.jsx&&/\\.[cm]?tsx$/.test(r.filename||"")}]),c.plugins.unshift([h],[t.A,{legacy:!0}]),c.plugins.push(u(),s.A))',
    to: 'r.ts&&(c.plugins.push([p.default,__conchOnce("ts"+!!(r.jsx&&/\\.[cm]?tsx$/.test(r.filename||"")),()=>({allowDeclareFields:!0,isTSX:r.jsx&&/\\.[cm]?tsx$/.test(r.filename||"")}))]),String(r.source).includes("@")?(c.plugins.unshift([h],[t.A,__conchOnce("legacy",()=>({legacy:!0}))]),c.plugins.push(u(),s.A)):c.plugins.push(s.A))',
  },
];

/** jiti's dist/babel.cjs with the edits above, or as it was (applied: false) when any does not fit. */
export function patchJitiBabel(source: string): { code: string; applied: boolean } {
  let code = source;
  for (const edit of EDITS) {
    const at = code.indexOf(edit.from);
    if (at < 0 || code.indexOf(edit.from, at + 1) >= 0) return { code: source, applied: false };
    code = code.slice(0, at) + edit.to + code.slice(at + edit.from.length);
  }
  return { code, applied: true };
}
