-- POST /comms/sms with the API keys in the file named after `--`, one per line, in turn (each
-- key is limited to 10 sends a second, so the load is spread over many credentials).
local keys = {}
local i = 0
local body = '{"to":"+12025550123","from":"Bench","message":"Benchmark message text"}'

function init(args)
  for line in io.lines(args[1]) do keys[#keys + 1] = line end
  i = math.random(#keys)
end

function request()
  i = i % #keys + 1
  return wrk.format('POST', nil, { ['authorization'] = 'Bearer ' .. keys[i], ['content-type'] = 'application/json' }, body)
end
