/**
 * A real Chromium (Debian's, made ready by the global setup: console-prerequisites.ts)
 * driven with playwright-core, for the console's browser tests. Test apps are configured
 * as http://fleet.test (the address the identity provider sends the browser back to, and
 * the only origin the api accepts cookie writes from), so the browser resolves fleet.test
 * to the app's loopback port: every request goes to the real app under its public name.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import type { TestApp } from './app';
import { CHROMIUM } from './console-prerequisites';
import { eventually } from './eventually';

export const CONSOLE_ORIGIN = 'http://fleet.test';
const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts/console');
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * `secureContext`: the browser counts http://fleet.test as a secure origin, as the console is
 * in production (HTTPS) and development (localhost); APIs that exist only in secure contexts
 * (the clipboard, for a secret's copy button) are then there, as for a person.
 */
export async function launchBrowser(t: TestApp, options: { secureContext?: boolean } = {}): Promise<Browser> {
  const port = new URL(t.baseUrl).port;
  const secure = options.secureContext ? [`--unsafely-treat-insecure-origin-as-secure=${CONSOLE_ORIGIN}`] : [];
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', `--host-resolver-rules=MAP fleet.test 127.0.0.1:${port}`, ...secure],
  });
}

/** What the page shows, once it shows it: a browser on a busy 2-core machine may take seconds. */
export const onPage = <T>(probe: () => Promise<T>) => eventually(probe, 15_000);

/**
 * Clicks a dialog's confirming button and waits for the dialog to close. One that stays
 * open fails the test with what it shows (the API's problem, when the write was refused).
 */
export async function confirmDialog(
  dialog: Locator,
  button: string | RegExp,
  options: { exact?: boolean } = {},
): Promise<void> {
  await dialog.getByRole('button', { name: button, ...options }).click();
  await dialog.waitFor({ state: 'detached' }).catch(async (error: unknown) => {
    const shown = (await dialog.innerText().catch(() => '')).replace(/\s+/g, ' ').trim();
    throw new Error(`the dialog stayed open, showing "${shown}" (${String(error)})`);
  });
}

/** Clicks one of the page's Operations (a rollout's Pause, a Git source's Sync now) and confirms it in its dialog. */
export async function confirmOperation(page: Page, operation: string): Promise<void> {
  await page.getByRole('group', { name: 'Operations' }).getByRole('button', { name: operation }).click();
  await confirmDialog(page.getByRole('dialog', { name: operation }), operation);
}

/**
 * A second page of `context` behind a slow network to the hub: nothing the hub sends reaches
 * it (not even `subscribed`, on which a page reads again), so it keeps showing what it first
 * read while others act.
 */
export async function pageCutOffFromHub(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.routeWebSocket(/\/hubs\/live-updates/, (socket) => {
    socket.connectToServer().onMessage(() => {});
  });
  return page;
}

/** Clicks a dialog's confirming button and answers the problem the dialog then shows (the write was refused). */
export async function refusedInDialog(dialog: Locator, button: string): Promise<string> {
  await dialog.getByRole('button', { name: button }).click();
  const problem = dialog.getByRole('alert');
  await problem.waitFor();
  return (await problem.textContent()) ?? '';
}

/** A browser profile of its own; a step that cannot happen fails in 20 s, naming the step. */
export async function newContext(browser: Browser): Promise<BrowserContext> {
  // With reduced motion the console's dialogs open at once: a click while one still scales
  // in can miss its button on a busy machine (CI lost two confirmations that way).
  const context = await browser.newContext({ reducedMotion: 'reduce' });
  context.setDefaultTimeout(20_000);
  return context;
}

/**
 * A page of `context` opened at `path` and signed in as `login` on the provider's page;
 * Content-Security-Policy violations it reports go into `cspViolations` when given.
 */
export async function newSignedInPage(
  context: BrowserContext,
  login: string,
  path: string,
  cspViolations?: string[],
): Promise<Page> {
  const opened = await context.newPage();
  opened.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations?.push(message.text());
  });
  await opened.goto(CONSOLE_ORIGIN + path);
  await signInOnProviderPage(opened, login);
  return opened;
}

/** The rows of a table (by its accessible name): each row's header and data cells. */
export async function tableRows(page: Page, table: string): Promise<string[][]> {
  return page
    .getByRole('table', { name: table })
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((cell) => cell.textContent ?? '')));
}

/**
 * Signs `login` in on the identity provider's own sign-in page, where the console sent the
 * browser (any password: the demo provider's development page), and waits until the
 * browser is back on the console.
 */
export async function signInOnProviderPage(page: Page, login: string): Promise<void> {
  await page.waitForURL((url) => url.origin !== CONSOLE_ORIGIN);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  await page.waitForURL((url) => url.origin === CONSOLE_ORIGIN && !url.pathname.startsWith('/api/'));
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/**
 * axe-core run in the page (evaluated through the debugging protocol, which the page's
 * Content-Security-Policy does not govern); the violations of serious or critical impact.
 */
export async function seriousAccessibilityViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: () => Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(({ id, impact, help, nodes }) => ({
      id,
      impact,
      help,
      nodes: nodes.map(({ target, failureSummary }) => ({ target, failureSummary })),
    }));
}

/**
 * Waits until nothing in `scope` (a dialog, or the whole page) is animating: axe run during a
 * dialog's fade-in measures the contrast of half-faded text.
 */
export async function settled(scope: Page | Locator): Promise<void> {
  const root = 'goto' in scope ? scope.locator('body') : scope;
  await onPage(async () =>
    expect(await root.evaluate((element) => element.getAnimations({ subtree: true }).length)).toBe(0),
  );
}

/**
 * Which of `secrets` any string in the page's JavaScript heap still is (the query and mutation
 * caches, what React keeps of earlier renders): a heap snapshot taken after a garbage collection.
 */
export async function heapHolds(on: Page, secrets: string[]): Promise<string[]> {
  const cdp = await on.context().newCDPSession(on);
  const chunks: string[] = [];
  cdp.on('HeapProfiler.addHeapSnapshotChunk', ({ chunk }) => chunks.push(chunk));
  try {
    await cdp.send('HeapProfiler.enable');
    await cdp.send('HeapProfiler.collectGarbage');
    await cdp.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  } finally {
    await cdp.detach();
  }
  const heap = chunks.join('');
  return secrets.filter((secret) => heap.includes(secret));
}

/** No serious or critical axe violation on the page as it is, and its screenshot kept. */
export async function expectAccessible(on: Page, name: string): Promise<void> {
  expect(await seriousAccessibilityViolations(on)).toEqual([]);
  await screenshot(on, name);
}

/** A screenshot of the whole page, kept as a test artifact under test-artifacts/console/. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  // The whole page in one viewport as tall as it is: a full-page capture would draw the fixed
  // header where the viewport happened to be, across the middle of the page.
  const viewport = page.viewportSize();
  const height = await page.evaluate<number>('document.documentElement.scrollHeight');
  if (viewport) await page.setViewportSize({ width: viewport.width, height: Math.max(viewport.height, height) });
  try {
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: !viewport });
  } finally {
    if (viewport) await page.setViewportSize(viewport);
  }
}

/** The text of a CodeMirror editor (by its textbox's accessible name), line by line. */
export async function editorText(page: Page, editor: string): Promise<string> {
  return page
    .getByRole('textbox', { name: editor })
    .locator('.cm-line')
    .evaluateAll((lines) => lines.map((line) => line.textContent ?? '').join('\n'));
}

/** Replaces a CodeMirror editor's whole content, as a person selecting all and pasting would. */
export async function replaceEditorContent(page: Page, editor: string, content: string): Promise<void> {
  await page.getByRole('textbox', { name: editor }).click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.insertText(content);
  await onPage(async () => expect(await editorText(page, editor)).toBe(content));
}
