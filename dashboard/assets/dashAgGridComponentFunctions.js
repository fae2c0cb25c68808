/* Cell renderers for the AG Grids: links that navigate inside the Dash app (like dcc.Link: pushState
   + Dash's location event), the name percent-encoded as one path segment (dashboard/urls.py).
   GroupLink: /clusters/<c>/groups/<name>; TopicLink: /clusters/<c>/topics/<name>;
   WhatifLink: /clusters/<c>/groups/<name>/whatif, <c> the row's `cluster` (a group or topic is
   (cluster, name)); a row without one links to the legacy URL (/groups/<name>, ...). */
var dagcomponentfuncs = (window.dashAgGridComponentFunctions = window.dashAgGridComponentFunctions || {});

function groupscopeLink(value, base, suffix, className, label, title) {
  if (value === undefined || value === null) {
    return null;
  }
  var href = base + encodeURIComponent(value) + suffix;
  return React.createElement(
    'a',
    {
      href: href,
      className: className,
      title: title,
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
    label
  );
}

function groupscopeCluster(props) {
  var c = props.data && props.data.cluster;
  return c === undefined || c === null ? '' : '/clusters/' + encodeURIComponent(c);
}

dagcomponentfuncs.GroupLink = function (props) {
  return groupscopeLink(
    props.value, groupscopeCluster(props) + '/groups/', '', 'group-link', props.value, props.value
  );
};

dagcomponentfuncs.TopicLink = function (props) {
  return groupscopeLink(
    props.value, groupscopeCluster(props) + '/topics/', '', 'topic-link', props.value, props.value
  );
};

dagcomponentfuncs.WhatifLink = function (props) {
  return groupscopeLink(
    props.value, groupscopeCluster(props) + '/groups/', '/whatif', 'whatif-link', 'what-if',
    'What-if reassignment of ' + props.value
  );
};
