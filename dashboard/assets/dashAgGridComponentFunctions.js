/* Cell renderers for the AG Grids. GroupLink: a group name that navigates inside the Dash app
   (like dcc.Link: pushState + Dash's location event), percent-encoding the name as one path segment. */
var dagcomponentfuncs = (window.dashAgGridComponentFunctions = window.dashAgGridComponentFunctions || {});

dagcomponentfuncs.GroupLink = function (props) {
  if (props.value === undefined || props.value === null) {
    return null;
  }
  var href = '/groups/' + encodeURIComponent(props.value);
  return React.createElement(
    'a',
    {
      href: href,
      className: 'group-link',
      title: props.value,
      onClick: function (e) {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.altKey || e.button !== 0) {
          return;
        }
        e.preventDefault();
        window.history.pushState({}, '', href);
        window.dispatchEvent(new CustomEvent('_dashprivate_pushstate'));
        window.scrollTo(0, 0);
      },
    },
    props.value
  );
};
