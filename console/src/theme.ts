import { createTheme } from '@mantine/core';

// Shade 8 of the primary blue: white text on filled buttons and links on white keep the
// 4.5:1 contrast WCAG AA asks for (shade 6, Mantine's default, does not for small text).
export const theme = createTheme({
  primaryColor: 'blue',
  primaryShade: 8,
  defaultRadius: 'sm',
});
