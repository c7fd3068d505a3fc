import { createTheme, DEFAULT_THEME, type CSSVariablesResolver, type MantineColorsTuple } from '@mantine/core';

// Mantine's darkest orange (#d9480f) carries white text at 4.3:1, under the 4.5:1 WCAG AA
// asks for small text (axe: color-contrast); ours is a little darker (5.3:1). The console
// uses it for warnings: a 4xx in the audit log, a rollout rolling back.
const orange = [...DEFAULT_THEME.colors.orange.slice(0, 9), '#c0410c'] as unknown as MantineColorsTuple;

// Shade 8 of the primary blue: white text on filled buttons and links on white keep the
// 4.5:1 contrast WCAG AA asks for (shade 6, Mantine's default, does not for small text).
export const theme = createTheme({
  primaryColor: 'blue',
  primaryShade: 8,
  defaultRadius: 'sm',
  colors: { orange },
});

// Mantine's dimmed text (field descriptions, `c="dimmed"`) is gray.6 on white, 3.3:1: below
// the 4.5:1 WCAG AA asks for small text (axe: color-contrast). Gray.7 keeps it.
export const cssVariablesResolver: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': 'var(--mantine-color-gray-7)' },
  dark: {},
});
