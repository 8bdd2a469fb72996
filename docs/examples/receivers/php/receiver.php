<?php
// A Herald webhook receiver on PHP's standard library alone.
//
//   HERALD_WEBHOOK_SECRET=whsec_... php -S 127.0.0.1:8000 receiver.php

const TOLERANCE_SECONDS = 300;

/** Returns null when Herald signed $rawBody with one of $secrets, or the reason it did not. */
function verify_herald(string $rawBody, string $timestamp, string $signatureHeader, array $secrets, ?int $now = null): ?string
{
    if (!ctype_digit($timestamp)) {
        return 'X-Service-Timestamp is missing or not Unix seconds';
    }
    if (abs(($now ?? time()) - (int) $timestamp) > TOLERANCE_SECONDS) {
        return 'X-Service-Timestamp is more than 300 s from now: a replay, or a clock is wrong';
    }
    $entries = preg_split('/[ ,]+/', $signatureHeader, -1, PREG_SPLIT_NO_EMPTY);
    foreach ($secrets as $secret) {
        $expected = 'v1=' . hash_hmac('sha256', $timestamp . '.' . $rawBody, $secret);
        foreach ($entries as $entry) {
            if (hash_equals($expected, $entry)) {
                return null;
            }
        }
    }
    return 'no v1 signature matches: a wrong secret, or the body is not the raw body';
}

$secrets = array_filter([getenv('HERALD_WEBHOOK_SECRET'), getenv('HERALD_WEBHOOK_SECRET_PREVIOUS')]);
if (!$secrets) {
    http_response_code(500); // a setup mistake: Herald retries until it is fixed
    error_log('HERALD_WEBHOOK_SECRET is not set');
    return;
}
$rawBody = file_get_contents('php://input'); // the raw bytes, not $_POST or a re-encoded json_decode()
$error = verify_herald(
    $rawBody,
    $_SERVER['HTTP_X_SERVICE_TIMESTAMP'] ?? '',
    $_SERVER['HTTP_X_SERVICE_SIGNATURE'] ?? '',
    $secrets,
);
if ($error !== null) {
    http_response_code(400);
    header('Content-Type: text/plain');
    echo $error;
    return;
}
$event = json_decode($rawBody, true);
// Skip event ids you have processed already; ignore types you do not know.
error_log("received {$event['type']} {$event['id']}");
http_response_code(204);
