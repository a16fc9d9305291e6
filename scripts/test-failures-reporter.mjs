// A vitest reporter for `npm test` (scripts/test.mjs): writes the run's failures, as JSON, to the file named by
// NPM_TEST_FAILURES, for the closing summary. One entry per failed test (project, file, test, first error's
// message and diff), per file that failed outside its tests (an import, a hook), and per error outside any file.
import { writeFileSync } from "node:fs";
import { relative } from "node:path";

function errorText(error, root) {
  const at = error?.stacks?.[0];
  const where = at ? `at ${relative(root, at.file)}:${at.line}:${at.column}` : undefined;
  return [error?.message ?? String(error), where, error?.diff].filter(Boolean).join("\n");
}

export default class TestFailuresReporter {
  onInit(vitest) {
    this.root = vitest.config.root;
  }

  onTestRunEnd(testModules, unhandledErrors) {
    const failures = [];
    for (const testModule of testModules) {
      const where = { project: testModule.project.name, file: relative(this.root, testModule.moduleId) };
      for (const error of testModule.errors())
        failures.push({ ...where, test: "(the file itself)", error: errorText(error, this.root) });
      for (const test of testModule.children.allTests("failed")) {
        failures.push({ ...where, test: test.fullName, error: errorText(test.result().errors?.[0], this.root) });
      }
    }
    for (const error of unhandledErrors)
      failures.push({ project: "", file: "", test: "(outside any test)", error: errorText(error, this.root) });
    if (process.env.NPM_TEST_FAILURES) writeFileSync(process.env.NPM_TEST_FAILURES, JSON.stringify(failures));
  }
}
