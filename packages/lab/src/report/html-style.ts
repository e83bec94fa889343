/** The report page's stylesheet: system fonts only, calm colours, readable on a phone. */
export const reportCss = `
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --rule: #d8dee4; --paper: #ffffff; --wash: #f6f8fa; --accent: #0a5bb5; --warn: #8a4b00; --warn-wash: #fff4e0; --alarm: #9b1c1c; --alarm-wash: #fdecec; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--wash); color: var(--ink); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main, header.page, footer { max-width: 1240px; margin: 0 auto; padding: 0 20px; }
header.page { padding-top: 28px; }
h1 { font-size: 1.6rem; margin: 0 0 4px; line-height: 1.25; overflow-wrap: anywhere; }
h1 .command { color: var(--muted); font-weight: 500; }
.lede { margin: 0 0 16px; color: var(--muted); overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; margin: 36px 0 10px; padding-bottom: 6px; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.05rem; margin: 24px 0 8px; }
h4 { font-size: 0.95rem; margin: 0 0 2px; }
p { margin: 8px 0; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; padding: 14px 16px; background: var(--paper); border: 1px solid var(--rule); border-radius: 8px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
@media (max-width: 640px) { dl.facts { grid-template-columns: 1fr; } dl.facts dd { margin-bottom: 6px; } }
.callout { margin: 16px 0; padding: 12px 16px; border-radius: 8px; border: 1px solid; }
.callout.warn { background: var(--warn-wash); border-color: #f0c27a; color: var(--warn); }
.callout.alarm { background: var(--alarm-wash); border-color: #f3a6a6; color: var(--alarm); font-weight: 600; }
.callout ul { margin: 4px 0 0; padding-left: 20px; }
.headline { font-size: 1.1rem; font-weight: 600; }
.table-wrap { overflow-x: auto; background: var(--paper); border: 1px solid var(--rule); border-radius: 8px; margin: 8px 0; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; font-variant-numeric: tabular-nums; }
caption { text-align: left; padding: 10px 12px 4px; color: var(--muted); font-size: 0.85rem; }
th, td { padding: 6px 10px; text-align: left; white-space: nowrap; border-top: 1px solid #eef1f4; }
thead th { border-top: 0; border-bottom: 1px solid var(--rule); font-weight: 600; color: var(--muted); white-space: normal; vertical-align: bottom; }
thead th[title] { text-decoration: underline dotted; cursor: help; }
tbody th { font-weight: 600; }
.num { text-align: right; }
tbody tr:nth-child(even) { background: #fafbfc; }
tr.emphasised { background: #eaf3ff !important; }
tr.total th, tr.total td { border-top: 2px solid var(--rule); font-weight: 600; }
.prose { white-space: normal; min-width: 16ch; }
.theirs { border-left: 4px solid #b8a0d0; padding-left: 12px; }
.theirs .table-wrap { background: #fbf9fd; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 520px), 1fr)); gap: 16px; }
figure.chart { margin: 0; padding: 12px 14px 10px; background: var(--paper); border: 1px solid var(--rule); border-radius: 8px; min-width: 0; }
figure.chart h3, figure.chart h4 { margin: 0 0 4px; }
figure.chart p { margin: 0 0 8px; color: var(--muted); font-size: 0.85rem; }
.canvas-box { position: relative; height: 300px; }
.not-measured { color: var(--muted); font-style: italic; }
footer { padding: 32px 20px 40px; color: var(--muted); font-size: 0.85rem; }
`
