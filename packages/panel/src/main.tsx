import { render } from 'preact';
import { App } from './app.tsx';
import './styles.css';
import './styles-portal.css';

render(<App />, document.getElementById('app')!);
