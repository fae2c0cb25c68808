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
    // A page's query string into its URL (app.py), unless the user has gone to another page since,
    // and into the store of the URL shown, so the router knows the page wrote it (not Back or
    // Forward). want.replace: the page restates the URL it was opened with; the history entry is
    // replaced first, so dcc.Location, finding the address already at its new search, adds none.
    toUrl: function (want, shown) {
      var nu = window.dash_clientside.no_update;
      if (!want || window.location.pathname !== want.path) { return [nu, nu]; }
      var mark = Object.assign({}, shown || {}, { path: want.path, search: want.search });
      if (window.location.search === want.search) { return [nu, mark]; }
      if (want.replace) {
        var url = want.path + want.search + window.location.hash;
        window.history.replaceState(window.history.state, '', url);
      }
      return [want.search, mark];
    },
    gridUrlState: function (req, shown) {
      if (!req) { return window.dash_clientside.no_update; }
      var state = { filterModel: req.filterModel || {}, sortModel: req.sortModel || [] };
      if (shown && JSON.stringify(state.filterModel) === JSON.stringify(shown.filterModel) &&
          JSON.stringify(state.sortModel) === JSON.stringify(shown.sortModel)) {
        return window.dash_clientside.no_update;
      }
      // the grid's first request is the filter and sort the page was opened with
      state.first = !shown;
      return state;
    },
  },
});
