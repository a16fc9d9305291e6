// A vitest reporter for `npm test` (scripts/test.mjs): writes the run's failures, as JSON, to the file named by
// NPM_TEST_FAILURES, for the closing summary. One entry per failed test (project, file, test, first error's
// message, where, and diff), per suite whose hook failed (beforeAll, afterAll), per file that failed outside
// its tests (an import), and per error outside any file.
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
    const add = (where, test, error) => failures.push({ ...where, test, error: errorText(error, this.root) });
    for (const testModule of testModules) {
      const where = { project: testModule.project.name, file: relative(this.root, testModule.moduleId) };
      for (const error of testModule.errors()) add(where, "(the file itself)", error);
      for (const suite of testModule.children.allSuites()) {
        for (const error of suite.errors()) add(where, `${suite.fullName} (a hook of the suite)`, error);
      }
      for (const test of testModule.children.allTests("failed")) add(where, test.fullName, test.result().errors?.[0]);
    }
    for (const error of unhandledErrors) add({ project: "", file: "" }, "(outside any test)", error);
    if (process.env.NPM_TEST_FAILURES) writeFileSync(process.env.NPM_TEST_FAILURES, JSON.stringify(failures));
  }
}
