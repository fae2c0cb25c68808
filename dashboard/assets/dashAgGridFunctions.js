/* Value formatters for the AG Grids (dash-ag-grid calls these by name from "function" strings).
   Times are not formatted here: the server writes them in the display zone (dashboard/timefmt.py). */
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});
