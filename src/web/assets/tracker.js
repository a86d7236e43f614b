/* Tandem click tracking (docs/tracking.md).
   <script src="{SITE_URL}/tracker.js" data-program-id="<program id>" async></script>
   On a landing with the program's referral parameter it reports the click, keeps the referral
   in a first-party cookie for the program's window, and exposes window.tandem.referral (a link
   string POST /referrals accepts as affiliateId). It never throws and never blocks the page. */
(function () {
  var w = window, d = document, REF = 'tandem_ref';
  var t = (w.tandem = w.tandem || {});
  var script = d.currentScript || d.querySelector('script[data-program-id]');

  function cookie(name) {
    var m = d.cookie.match(new RegExp('(?:^|; )' + name + '=([^;]*)'));
    return m ? decodeURIComponent(m[1]) : null;
  }
  function setCookie(name, value, days, domain) {
    d.cookie = name + '=' + encodeURIComponent(value) + '; Max-Age=' + days * 86400 + '; Path=/; SameSite=Lax' +
      (domain ? '; Domain=' + domain : '') + (location.protocol === 'https:' ? '; Secure' : '');
  }
  // The program's domain when this page is on it or a subdomain, so shop. and app. share the
  // referral; none for hosts a cookie cannot name (localhost, addresses).
  function cookieDomain(domain) {
    var host = location.hostname;
    if (!domain || domain.indexOf('.') < 0 || /^[\d.]+$|:/.test(host)) return '';
    return host === domain || host.slice(-domain.length - 1) === '.' + domain ? domain : '';
  }
  // Stripe Payment Links and pricing tables on the page carry the referral to Checkout as
  // client_reference_id (docs/stripe.md), unless the page set one itself.
  function decorate() {
    var ref = t.referral, i, u;
    if (!ref || !/^[\w-]{1,200}$/.test(ref)) return;
    var links = d.querySelectorAll('a[href^="https://buy.stripe.com/"]');
    for (i = 0; i < links.length; i++) {
      try {
        u = new URL(links[i].href);
        if (!u.searchParams.get('client_reference_id')) { u.searchParams.set('client_reference_id', ref); links[i].href = u.href; }
      } catch (e) { /* not a URL: left alone */ }
    }
    var tables = d.querySelectorAll('stripe-pricing-table');
    for (i = 0; i < tables.length; i++) if (!tables[i].getAttribute('client-reference-id')) tables[i].setAttribute('client-reference-id', ref);
  }
  function ready() {
    t.ready = true;
    if (d.readyState === 'loading') d.addEventListener('DOMContentLoaded', decorate);
    else decorate();
    try {
      w.dispatchEvent(new CustomEvent('tandem:ready', { detail: { referral: t.referral } }));
    } catch (e) { /* very old browsers: window.tandem still holds the referral */ }
  }

  function run() {
    try {
      t.referral = cookie(REF);
      var id = script && script.getAttribute('data-program-id');
      // Only a landing with a query string can carry a referral: other pages send nothing.
      if (!id || !location.search || !w.fetch) return ready();
      var base = new URL(script.src, location.href).origin;
      var abort = w.AbortController ? new AbortController() : null;
      var timer = setTimeout(function () { if (abort) abort.abort(); }, 5000);
      fetch(base + '/api/track/click?programId=' + encodeURIComponent(id), {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        // No visitor id: the server tells visitors apart (docs/tracking.md, "What is counted").
        body: JSON.stringify({ url: location.href }),
        credentials: 'omit',
        keepalive: true,
        signal: abort ? abort.signal : undefined
      })
        .then(function (r) {
          if (r.ok) return r.json();
          // A set-up mistake (a page outside the program's domain, a wrong program id) says so
          // in the console; other refusals (limits, inactive affiliates) stay quiet.
          if (r.status === 403 || r.status === 404) r.json().then(function (p) { if (w.console && p.detail) console.warn('Tandem: ' + p.detail); }, function () {});
          return null;
        })
        .then(function (a) {
          if (!a || !a.referral) return;
          if (t.referral && a.attribution === 'first') return;
          setCookie(REF, a.referral, a.cookieDays, cookieDomain(a.domain));
          t.referral = a.referral;
        })
        .catch(function () { /* Tandem down or slow: the page goes on, the old referral stays */ })
        .then(function () { clearTimeout(timer); ready(); });
    } catch (e) {
      ready();
    }
  }

  // data-consent="required": nothing is stored until the site calls window.tandem.consent().
  t.consent = run;
  if (script && script.getAttribute('data-consent') === 'required') {
    t.referral = cookie(REF);
    ready();
  } else {
    run();
  }
})();
