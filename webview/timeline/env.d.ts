// esbuild bundles imported CSS into dist/webview/timeline.css, next to timeline.js.
declare module '*.css';
