import http from 'node:http';

/** The Basic authorization of a client. */
export const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** GET with node:http (fetch would drop a Host header): the status and the JSON body. */
export function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, any> }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    }).on('error', reject);
  });
}

/** A form POST: the status and the JSON body. */
export async function post(url: string, params: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(params) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}
