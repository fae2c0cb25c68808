/* Clientside helpers. refreshGrid: on each live tick, ask the fleet grid's infinite row model to
   re-read the blocks it holds (keeps page and scroll position). */
window.dash_clientside = Object.assign({}, window.dash_clientside, {
  groupscope: {
    refreshGrid: function (n, id) {
      try {
        var api = window.dash_ag_grid.getApi(id);
        if (api && api.refreshInfiniteCache) { api.refreshInfiniteCache(); }
      } catch (e) { /* grid not mounted yet */ }
      return window.dash_clientside.no_update;
    },
  },
});
