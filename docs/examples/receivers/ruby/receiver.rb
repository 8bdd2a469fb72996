# A Herald webhook receiver on Ruby's standard library alone.
#
#   HERALD_WEBHOOK_SECRET=whsec_... PORT=8000 ruby receiver.rb
require "json"
require "openssl"
require "socket"

TOLERANCE_SECONDS = 300

class VerificationError < StandardError; end

# Raises VerificationError unless Herald signed raw_body with one of secrets.
def verify(raw_body, timestamp, signature_header, secrets, now: Time.now.to_i)
  unless timestamp.to_s.match?(/\A[0-9]+\z/)
    raise VerificationError, "X-Service-Timestamp is missing or not Unix seconds"
  end
  if (now - timestamp.to_i).abs > TOLERANCE_SECONDS
    raise VerificationError, "X-Service-Timestamp is more than 300 s from now: a replay, or a clock is wrong"
  end
  signed = "#{timestamp}.".b + raw_body.b
  entries = signature_header.to_s.split(/[ ,]+/)
  secrets.each do |secret|
    expected = "v1=" + OpenSSL::HMAC.hexdigest("SHA256", secret, signed)
    return if entries.any? { |entry| OpenSSL.secure_compare(expected, entry) }
  end
  raise VerificationError, "no v1 signature matches: a wrong secret, or the body is not the raw body"
end

SECRETS = [ENV.fetch("HERALD_WEBHOOK_SECRET"), ENV["HERALD_WEBHOOK_SECRET_PREVIOUS"]].compact.reject(&:empty?)

# In Rails, Sinatra or Rack, call verify with request.raw_post (or request.body.read)
# and the headers; this tiny server only shows the whole round trip.
def receive(raw_body, headers)
  verify(raw_body, headers["x-service-timestamp"], headers["x-service-signature"], SECRETS)
  event = JSON.parse(raw_body)
  # Skip event ids you have processed already; ignore types you do not know.
  puts "received #{event["type"]} #{event["id"]}"
  $stdout.flush
  [204, ""]
rescue VerificationError => e
  [400, e.message]
end

server = TCPServer.new("127.0.0.1", Integer(ENV.fetch("PORT", "8000")))
loop do
  client = server.accept
  client.gets # the request line
  headers = {}
  while (line = client.gets) && line != "\r\n"
    name, value = line.split(":", 2)
    headers[name.strip.downcase] = value.to_s.strip
  end
  status, text = receive(client.read(headers["content-length"].to_i), headers)
  head = status == 204 ? "HTTP/1.1 204 No Content\r\n" :
    "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: #{text.bytesize}\r\n"
  client.write("#{head}Connection: close\r\n\r\n#{text}")
  client.close
end
