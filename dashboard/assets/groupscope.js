/* Clientside helpers. refreshGrid: on each live tick, ask the fleet grid's infinite row model to
   re-read the blocks it holds (keeps page and scroll position). navigate, toUrl, gridUrlState: see
   below. */
window.dash_clientside = Object.assign({}, window.dash_clientside, {
  groupscope: {
    refreshGrid: function (n, id) {
      try {
        var api = window.dash_ag_grid.getApi(id);
        if (api && api.refreshInfiniteCache) { api.refreshInfiniteCache(); }
      } catch (e) { /* grid not mounted yet */ }
      return window.dash_clientside.no_update;
    },
    // The filter and sort of a server-side grid's block request, kept only when they changed
    // (scrolling and the live tick ask for blocks too): the page's URL follows them (server_grid.py).
    // Go to want.href inside the app, as the grids' links do (pushState and Dash's location event):
    // the cluster switcher's destination, with the query it keeps (app.py).
    navigate: function (want) {
      var nu = window.dash_clientside.no_update;
      if (!want || !want.href) { return nu; }
      if (window.location.pathname + window.location.search !== want.href) {
        window.history.pushState({}, '', want.href);
        window.dispatchEvent(new CustomEvent('_dashprivate_pushstate'));
      }
      return nu;
    },
    // A page's query string into its URL (app.py), unless the user has gone to another page since.
    toUrl: function (want) {
      var nu = window.dash_clientside.no_update;
      if (!want || window.location.pathname !== want.path) { return nu; }
      return window.location.search === want.search ? nu : want.search;
    },
    gridUrlState: function (req, shown) {
      if (!req) { return window.dash_clientside.no_update; }
      var state = { filterModel: req.filterModel || {}, sortModel: req.sortModel || [] };
      if (shown && JSON.stringify(state) === JSON.stringify(shown)) {
        return window.dash_clientside.no_update;
      }
      return state;
    },
  },
});
