import { createTheme, DEFAULT_THEME, type CSSVariablesResolver, type MantineColorsTuple } from '@mantine/core';

/** A palette of Mantine's with its darkest shade (9) replaced: the one white text sits on. */
const darkest = (palette: MantineColorsTuple, shade9: string) =>
  [...palette.slice(0, 9), shade9] as unknown as MantineColorsTuple;

// Mantine's darkest orange (#d9480f) and yellow (#e67700) carry white text at 4.3:1 and
// 3.0:1, under the 4.5:1 WCAG AA asks for small text (axe: color-contrast); ours are darker
// (5.3:1, 5.2:1). The console uses them for warnings: a 4xx in the audit log, a rollout
// rolling back or paused.
const orange = darkest(DEFAULT_THEME.colors.orange, '#c0410c');
const yellow = darkest(DEFAULT_THEME.colors.yellow, '#a15c00');

// Shade 8 of the primary blue: white text on filled buttons and links on white keep the
// 4.5:1 contrast WCAG AA asks for (shade 6, Mantine's default, does not for small text).
// Whoever asks their system for reduced motion gets none: dialogs and menus appear at once.
export const theme = createTheme({
  respectReducedMotion: true,
  primaryColor: 'blue',
  primaryShade: 8,
  defaultRadius: 'sm',
  colors: { orange, yellow },
});

// Mantine's dimmed text (field descriptions, `c="dimmed"`) is gray.6 on white, 3.3:1: below
// the 4.5:1 WCAG AA asks for small text (axe: color-contrast). Gray.7 keeps it.
export const cssVariablesResolver: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': 'var(--mantine-color-gray-7)' },
  dark: {},
});
