// `npm run console:build` (vite build console): the operator console into console/dist,
// which the api serves at `/`. Assets get content-hashed names under assets/ (cached for a
// year by the api); no inline script, so the api's Content-Security-Policy can forbid it.
import react from '@vitejs/plugin-react-swc';
import { defineConfig } from 'vite';

export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0, chunkSizeWarningLimit: 1500 },
});
