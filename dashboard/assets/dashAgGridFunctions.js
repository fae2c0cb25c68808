/* Value formatters for the AG Grids (dash-ag-grid calls these by name from "function" strings).
   Times are not formatted here: the server writes them in the display zone (dashboard/timefmt.py). */
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

/* A streams group's members grid (dashboard/pages/group.py, STREAMS_MEMBER_COLUMNS): the values are
   the rows' whole ones (the tooltips and the API show them); the cells say them in less room. */

// A Kafka Streams process id is a UUID: its first 8 hex digits tell the processes apart.
function shortId(id) {
  return id && id.length > 12 ? id.slice(0, 8) + '\u2026' : id;
}

dagfuncs.streamsProcessId = function (params) {
  return shortId(params.value);
};

// The client id Kafka Streams makes when none is set holds the process id
// ("<application id>-<process id>-StreamThread-1-consumer"): said there as the Process column says it.
dagfuncs.streamsClientId = function (params) {
  var p = params.data && params.data.process_id;
  if (!params.value || !p || p.length <= 12 || params.value.indexOf(p) < 0) {
    return params.value;
  }
  return params.value.replace(p, shortId(p));
};

// Tasks as group_doc.fmt_tasks says them ("active 0:0-3 1:5"): a range's hyphen made non-breaking, so
// a wrapped cell never ends a line in "0:0-" and begins the next with "3".
function unbrokenRanges(text) {
  return typeof text === 'string' ? text.replace(/(\d)-(\d)/g, '$1\u2011$2') : text;
}

dagfuncs.streamsTasks = function (params) {
  return unbrokenRanges(params.value);
};

// A member whose target tasks are its tasks (reconciled) says so in a word: the target is read only
// where it differs, on a member still reconciling.
dagfuncs.streamsTargetTasks = function (params) {
  if (params.value !== null && params.value !== undefined && params.data && params.value === params.data.tasks) {
    return 'same';
  }
  return unbrokenRanges(params.value);
};

/* A KIP-848 or share group's members grid (dashboard/pages/group.py, MODERN_MEMBER_COLUMNS): a member
   whose target assignment is its assignment (reconciled) says so in a word, as a streams member's
   target tasks do; the target is read only where it differs (the tooltip has the whole). */
dagfuncs.sameAsAssignment = function (params) {
  if (params.value !== null && params.value !== undefined && params.data && params.value === params.data.assignment) {
    return 'same';
  }
  return params.value;
};

// A host ("/10.244.1.101", "broker-1.internal") may wrap after a dot rather than inside a number: a
// zero-width space after each dot. (The cell's text for the eye only; its tooltip and the API keep the
// value as it is.)
dagfuncs.breakAtDots = function (params) {
  return typeof params.value === 'string' ? params.value.replace(/\./g, '.\u200b') : params.value;
};
