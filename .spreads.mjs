import ts from 'typescript';
import { readFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
const files = execSync("git ls-files 'src/**/*.ts'", { encoding: 'utf8' }).trim().split('\n');
for (const f of files) {
  const sf = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (n) => {
    if (ts.isObjectLiteralExpression(n)) {
      const spreads = n.properties.filter((p) => ts.isSpreadAssignment(p));
      if (spreads.length >= 2 && n.properties.indexOf(spreads[1]) > 0) {
        const { line } = sf.getLineAndCharacterOfPosition(n.getStart());
        console.log(`${f}:${line + 1}: ${spreads.length} spreads, ${n.properties.length} props: ${n.getText().replace(/\s+/g, ' ').slice(0, 110)}`);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
}
