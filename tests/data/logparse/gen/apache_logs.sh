#!/bin/sh
# Writes samples of Apache httpd 2.4's access log (combined format) and error log with the real
# httpd (Debian's apache2-bin): a 200, a 404, a 403 (denied by configuration: AH01630 in the
# error log at the default level) and the notices of start and stop at LogLevel info.
# usage: apache_logs.sh OUTDIR   (needs apache2-bin and curl; uses 127.0.0.1:18492)
set -eu
out=$1
tmp=$(mktemp -d)
mkdir -p "$tmp/html/private" "$out/apache_access" "$out/apache_error"
echo ok > "$tmp/html/index.html"
cat > "$tmp/httpd.conf" <<CONF
ServerRoot $tmp
PidFile $tmp/httpd.pid
Listen 127.0.0.1:18492
ServerName localhost
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
TypesConfig /etc/mime.types
LogLevel info
ErrorLog $tmp/error.log
LogFormat "%h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\"" combined
CustomLog $tmp/access.log combined
DocumentRoot $tmp/html
<Directory $tmp/html/private>
    Require all denied
</Directory>
CONF
/usr/sbin/apache2 -f "$tmp/httpd.conf" -k start
for _ in 1 2 3 4 5 6 7 8 9 10; do curl -s -o /dev/null http://127.0.0.1:18492/ && break; sleep 0.2; done
curl -s -o /dev/null -A 'Mozilla/5.0 (X11; Linux x86_64)' -e 'http://example.com/start' http://127.0.0.1:18492/index.html
curl -s -o /dev/null http://127.0.0.1:18492/missing.png
curl -s -o /dev/null http://127.0.0.1:18492/private/secret.txt
/usr/sbin/apache2 -f "$tmp/httpd.conf" -k stop
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -e "$tmp/httpd.pid" ] || break; sleep 0.2; done
cp "$tmp/access.log" "$out/apache_access/input"
cp "$tmp/error.log" "$out/apache_error/input"
rm -rf "$tmp"
