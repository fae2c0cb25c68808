"""The Lua scripts the store runs on the Redis server, each beside why it runs there."""

# Walk one index in order, keep the names that match a substring / type / state set, count them all
# and return the requested page. Runs on the server, so 50,000 names never cross the network.
FILTER_SCRIPT = """
local index, types, states = KEYS[1], KEYS[2], KEYS[3]
local rev = ARGV[1] == '1'
local sub = ARGV[2]
local want_type = ARGV[3]
local offset = tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local want_states = {}
local any_state = true
for i = 6, #ARGV do want_states[ARGV[i]] = true; any_state = false end
local total = 0
local page = {}
local n = redis.call('ZCARD', index)
local chunk = 5000
local start = 0
while start < n do
  local names
  if rev then names = redis.call('ZRANGE', index, start, start + chunk - 1, 'REV')
  else names = redis.call('ZRANGE', index, start, start + chunk - 1) end
  for _, name in ipairs(names) do
    local ok = true
    if sub ~= '' and not string.find(string.lower(name), sub, 1, true) then ok = false end
    if ok and want_type ~= '' and redis.call('HGET', types, name) ~= want_type then ok = false end
    if ok and not any_state and not want_states[redis.call('HGET', states, name) or ''] then ok = false end
    if ok then
      if total >= offset and #page < limit then page[#page + 1] = name end
      total = total + 1
    end
  end
  start = start + chunk
end
return {total, page}
"""

# Trim one history series (hash of rows + sorted set of row ids by time) older than a cutoff. The
# newest row always stays: it is the state in force now, however long ago it began.
TRIM_SERIES_SCRIPT = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1])
local last = redis.call('ZRANGE', KEYS[2], -1, -1)[1]
local gone = {}
for _, id in ipairs(ids) do if id ~= last then gone[#gone + 1] = id end end
for i = 1, #gone, 1000 do
  local j = math.min(i + 999, #gone)
  redis.call('HDEL', KEYS[1], unpack(gone, i, j))
  redis.call('ZREM', KEYS[2], unpack(gone, i, j))
end
return #gone
"""

# A lag point into its slot (write_lag_points with slot_ms): a slot keeps its peak (`SLOT:p`, the
# point of greatest lag) and its newest point (`SLOT:l`, when it is not the peak), each scored by its
# own time: thinned so, the chart keeps the spikes an ops engineer looks for and the value now.
LAG_SLOT_SCRIPT = """
local peak_id, last_id = ARGV[1] .. ':p', ARGV[1] .. ':l'
local peak = redis.call('HGET', KEYS[1], peak_id)
local lag = tonumber(ARGV[3])
if peak then peak = cjson.decode(peak) end
if peak and tonumber(peak['ts']) == tonumber(ARGV[4]) then return 0 end  -- written again (a replay)
if (not peak) or lag > tonumber(peak['lag']) then
  redis.call('HSET', KEYS[1], peak_id, ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[4], peak_id)
  redis.call('HDEL', KEYS[1], last_id)
  redis.call('ZREM', KEYS[2], last_id)
else
  redis.call('HSET', KEYS[1], last_id, ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[4], last_id)
end
return 1
"""

# Lag points that crossed the detail horizon keep their totals only (trim, LAG_DETAIL_MS): ARGV[1..2]
# the window of point times to look at. A point already compacted has nothing left to strip.
COMPACT_LAG_SCRIPT = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], ARGV[2])
local n = 0
for _, id in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[1], id)
  if raw and (string.find(raw, '"partitions":{"', 1, true) or string.find(raw, '"members":{"', 1, true)) then
    local point = cjson.decode(raw)
    redis.call('HSET', KEYS[1], id, cjson.encode({ts = point['ts'], lag = point['lag'],
      lag_seconds = point['lag_seconds'], partitions = {}, members = {}}))
    n = n + 1
  end
end
return n
"""

# Add a dead letter once per record position: a replayed batch finds the position already seen.
DEAD_LETTER_SCRIPT = """
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], '*', 'position', ARGV[1], 'ts', ARGV[2], 'entry', ARGV[3])
return 1
"""
