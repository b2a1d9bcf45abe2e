// Compare two `vaultctl check --json` outputs (online, offline): the same
// counts and the same lists, in any order. Prints each difference; exit 1
// when there is one.
//   node same-check.js ONLINE.json OFFLINE.json
"use strict";
const fs = require("fs");
const norm = (f) => {
  const o = JSON.parse(fs.readFileSync(f, "utf8"));
  delete o.vault;
  for (const k of Object.keys(o))
    if (Array.isArray(o[k])) o[k] = o[k].map((x) => JSON.stringify(x)).sort();
  return o;
};
const a = norm(process.argv[2]);
const b = norm(process.argv[3]);
const diff = Object.keys({ ...a, ...b }).filter(
  (k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]),
);
for (const k of diff)
  console.log(
    `${k}: online ${JSON.stringify(a[k])} offline ${JSON.stringify(b[k])}`,
  );
process.exit(diff.length ? 1 : 0);
