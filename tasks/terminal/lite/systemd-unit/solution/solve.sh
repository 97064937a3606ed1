#!/bin/bash
set -e
cat > /app/web.service <<'EOF'
[Unit]
Description=Web app
After=network.target

[Service]
ExecStart=/usr/bin/python3 -m http.server 8080
User=www-data
WorkingDirectory=/srv/www
Restart=on-failure

[Install]
WantedBy=multi-user.target
EOF
