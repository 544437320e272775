-- POST /verify/start with the API keys in the file named after `--`, one per line, in turn (each
-- key may start 10 a second), each request to a number of its own: one number may get a code only
-- every 30 seconds, so each run starts its numbers at the offset given as the second argument.
local keys = {}
local i = 0
local n = 0

function init(args)
  for line in io.lines(args[1]) do keys[#keys + 1] = line end
  i = math.random(#keys)
  n = tonumber(args[2])
end

function request()
  i = i % #keys + 1
  n = n + 1
  local body = string.format('{"to":"+1%010d","channel":"sms","brand":"Bench"}', 2000000000 + n % 7000000000)
  return wrk.format('POST', nil, { ['authorization'] = 'Bearer ' .. keys[i], ['content-type'] = 'application/json' }, body)
end

