-- Verdicts on the request (side 'request', made by the gateway's request
-- rules): which part of the request each judged, e.g. messages[3].parts[0].
ALTER TABLE verdicts ADD COLUMN part TEXT;
