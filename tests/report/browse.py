#!/usr/bin/env python3
# browse.py: loads a page in headless Chromium and drives it over the Chrome DevTools Protocol,
# for tests/report/test-html.c. Standard library only (Debian's python3; no pip): a WebSocket
# client of about 60 lines and the few CDP commands the tests need.
#
#   browse.py PAGE STEP...
#
# Steps, in order, after the page has loaded and set document.body.dataset.ready:
#   eval=EXPR          evaluates EXPR in the page (promises awaited); its value goes to "results"
#   wait=EXPR          evaluates EXPR until it is truthy (10 s at most, else an error)
#   click=SEL@FX,FY    a real mouse click (moved, pressed, released) at the fraction FX, FY of
#                      the first element matching the CSS selector SEL
#   shot=PATH          a PNG screenshot of the whole page into PATH
#   hover=SEL@FX,FY    the mouse moved to that point, no button pressed
#   type=SEL@TEXT      focuses the element SEL, clears it and types TEXT (Input.insertText)
#   sleep=MS           waits MS milliseconds (for the page's transitions)
# Prints one JSON object: {"errors": [...], "requests": [...], "results": [...]}, where errors
# are the page's console errors, uncaught exceptions and log entries of level error, and
# requests every URL the page asked for that is not the page itself or data: (it must ask for
# none); a dialog (alert) counts as an error and is dismissed. Exit status 0 when the steps ran
# (whatever the page did), 77 when no Chromium is installed (the test then skips), 1 when the
# browser or a step failed.
#
# Chromium runs with a fresh profile in a temporary directory, its DevTools port chosen by the
# kernel (--remote-debugging-port=0, read back from DevToolsActivePort) on 127.0.0.1, and is
# killed at the end whatever happens. Never: touch the network, or leave the browser running.
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

TIMEOUT = 30  # seconds for the browser to start, the page to load, one CDP answer


class WebSocket:
    """A minimal RFC 6455 client: text frames out (masked), text frames in, pings answered."""

    def __init__(self, port, path):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=TIMEOUT)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f'GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n'
                           'Upgrade: websocket\r\nConnection: Upgrade\r\n'
                           f'Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n')
                          .encode())
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise OSError('the browser closed the WebSocket handshake')
            head += chunk
        head, _, self.buf = head.partition(b'\r\n\r\n')
        if b' 101 ' not in head.split(b'\r\n')[0]:
            raise OSError('WebSocket handshake refused: ' + head.split(b'\r\n')[0].decode())

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise OSError('the browser closed the WebSocket')
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _send(self, opcode, payload):
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack('>H', n)
        else:
            head += bytes([0x80 | 127]) + struct.pack('>Q', n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, text):
        self._send(0x1, text.encode())

    def recv(self):
        message = b''
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack('>H', self._read(2))[0]
            elif n == 127:
                n = struct.unpack('>Q', self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            opcode = b0 & 0x0f
            if opcode == 0x9:
                self._send(0xa, payload)
                continue
            if opcode == 0x8:
                raise OSError('the browser closed the WebSocket')
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if b0 & 0x80:
                    return message.decode()


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.session = None
        self.errors, self.requests, self.events = [], [], []

    def _event(self, m):
        method, p = m.get('method'), m.get('params', {})
        if method == 'Runtime.consoleAPICalled' and p.get('type') in ('error', 'assert'):
            self.errors.append('console.' + p['type'] + ': ' + ' '.join(
                str(a.get('value', a.get('description', ''))) for a in p.get('args', [])))
        elif method == 'Runtime.exceptionThrown':
            d = p.get('exceptionDetails', {})
            self.errors.append('exception: ' + d.get('exception', {}).get(
                'description', d.get('text', '?')))
        elif method == 'Log.entryAdded' and p.get('entry', {}).get('level') == 'error':
            self.errors.append('log: ' + p['entry'].get('text', '?'))
        elif method == 'Page.javascriptDialogOpening':
            self.errors.append('dialog: ' + p.get('type', '?') + ': ' + p.get('message', ''))
            # dismissed, or the page would wait for ever; the answer's id is none call() awaits
            self.ws.send(json.dumps({'id': 1 << 40, 'sessionId': self.session,
                                     'method': 'Page.handleJavaScriptDialog',
                                     'params': {'accept': False}}))
        elif method == 'Network.requestWillBeSent':
            self.requests.append(p.get('request', {}).get('url', '?'))
        self.events.append(method)

    def call(self, method, **params):
        self.next_id += 1
        msg = {'id': self.next_id, 'method': method, 'params': params}
        if self.session and not method.startswith('Target.'):
            msg['sessionId'] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            m = json.loads(self.ws.recv())
            if m.get('id') == self.next_id:
                if 'error' in m:
                    raise RuntimeError(f'{method}: {m["error"].get("message")}')
                return m.get('result', {})
            if 'method' in m:
                self._event(m)

    def wait_event(self, method, seconds):
        end = time.monotonic() + seconds
        while method not in self.events:
            if time.monotonic() > end:
                raise RuntimeError(f'no {method} within {seconds} s')
            self.ws.sock.settimeout(max(0.1, end - time.monotonic()))
            try:
                m = json.loads(self.ws.recv())
            except socket.timeout:
                continue
            finally:
                self.ws.sock.settimeout(TIMEOUT)
            if 'method' in m:
                self._event(m)

    def evaluate(self, expr):
        r = self.call('Runtime.evaluate', expression=expr, returnByValue=True,
                      awaitPromise=True)
        if 'exceptionDetails' in r:
            d = r['exceptionDetails']
            raise RuntimeError(f'{expr}: ' + d.get('exception', {}).get(
                'description', d.get('text', '?')))
        return r.get('result', {}).get('value')

    def wait_for(self, expr, seconds=10):
        end = time.monotonic() + seconds
        while not self.evaluate(expr):
            if self.errors:
                raise RuntimeError(f'{expr}: still false, and the page failed')
            if time.monotonic() > end:
                raise RuntimeError(f'{expr}: still false after {seconds} s')
            time.sleep(0.05)

    def click(self, spec, kinds=('mouseMoved', 'mousePressed', 'mouseReleased')):
        sel, _, at = spec.rpartition('@')
        fx, fy = (float(v) for v in at.split(','))
        r = self.evaluate('(() => { const e = document.querySelector(' + json.dumps(sel) +
                          '); if (!e) return null; e.scrollIntoView({block: "center"});'
                          ' const r = e.getBoundingClientRect();'
                          ' return [r.left, r.top, r.width, r.height]; })()')
        if not r:
            raise RuntimeError(f'click: no element matches {sel}')
        x, y = r[0] + fx * r[2], r[1] + fy * r[3]
        for kind in kinds:
            self.call('Input.dispatchMouseEvent', type=kind, x=x, y=y, button='left',
                      clickCount=0 if kind == 'mouseMoved' else 1)


def find_chromium():
    for name in ('chromium', 'chromium-browser', 'google-chrome'):
        path = shutil.which(name)
        if path:
            return path
    return None


def main(argv):
    if len(argv) < 2:
        sys.exit('usage: browse.py PAGE STEP...')
    chromium = find_chromium()
    if not chromium:
        print('browse.py: no chromium installed (Debian: apt-get install chromium)',
              file=sys.stderr)
        return 77
    page_url = 'file://' + os.path.abspath(argv[1])
    profile = tempfile.mkdtemp(prefix='leek-chromium-')
    log = open(os.path.join(profile, 'chromium.log'), 'wb')
    proc = subprocess.Popen(
        [chromium, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
         '--no-default-browser-check', '--disable-extensions', '--disable-sync',
         '--disable-background-networking', '--disable-component-update',
         '--mute-audio', '--hide-scrollbars', '--window-size=1400,1000',
         '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0',
         f'--user-data-dir={profile}', 'about:blank'],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    out = {'errors': [], 'requests': [], 'results': []}
    status = 0
    page = None
    try:
        port_file = os.path.join(profile, 'DevToolsActivePort')
        end = time.monotonic() + TIMEOUT
        while not (os.path.exists(port_file) and len(open(port_file).read().split()) >= 2):
            if proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError('chromium did not start (its log: ' + log.name + ')')
            time.sleep(0.05)
        port, path = open(port_file).read().split()[:2]
        page = Page(WebSocket(int(port), path))
        target = page.call('Target.createTarget', url='about:blank')['targetId']
        page.session = page.call('Target.attachToTarget', targetId=target,
                                 flatten=True)['sessionId']
        for domain in ('Runtime', 'Log', 'Page', 'Network'):
            page.call(domain + '.enable')
        page.call('Emulation.setDeviceMetricsOverride', width=1400, height=1000,
                  deviceScaleFactor=1, mobile=False)
        page.call('Page.navigate', url=page_url)
        page.wait_event('Page.loadEventFired', TIMEOUT)
        page.wait_for('document.body && document.body.dataset.ready === "1"', TIMEOUT)
        for step in argv[2:]:
            kind, _, arg = step.partition('=')
            if kind == 'eval':
                out['results'].append(page.evaluate(arg))
            elif kind == 'wait':
                page.wait_for(arg)
            elif kind == 'click':
                page.click(arg)
            elif kind == 'hover':
                page.click(arg, ('mouseMoved',))
            elif kind == 'sleep':
                time.sleep(float(arg) / 1000)
            elif kind == 'type':
                sel, _, text = arg.partition('@')
                page.evaluate('(() => { const e = document.querySelector(' + json.dumps(sel) +
                              '); e.focus(); e.select(); })()')
                page.call('Input.insertText', text=text)
            elif kind == 'shot':
                r = page.call('Page.captureScreenshot', format='png', captureBeyondViewport=True)
                with open(arg, 'wb') as f:
                    f.write(base64.b64decode(r['data']))
            else:
                raise RuntimeError(f'unknown step "{step}"')
    except Exception as e:  # the test fails with what went wrong
        out['failure'] = f'{type(e).__name__}: {e}'
        status = 1
    finally:
        if page:
            out['errors'] = page.errors
            out['requests'] = [u for u in page.requests
                               if u != page_url and not u.startswith('data:')
                               and u != 'about:blank']
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        log.close()
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(out))
    return status


sys.exit(main(sys.argv))
