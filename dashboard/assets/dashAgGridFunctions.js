/* Value formatters for the AG Grids (dash-ag-grid calls these by name from "function" strings). */
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

dagfuncs.groupscopeTime = function (ms) {
  if (!ms) {
    return '';
  }
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
};
